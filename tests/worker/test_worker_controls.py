"""The worker under queue controls in-process: it waits while held and wakes on a change."""

from __future__ import annotations

import threading
import time

from spark_queue.store import Store
from spark_queue.worker import Worker


def wait_for(condition, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_a_paused_queue_holds_the_worker_and_resume_wakes_it_at_once(store, store_path):
    q = store.queue("q")
    q.enqueue_many(range(20))
    q.pause()
    done: list[int] = []
    # A poll interval far beyond the test's patience: only the resume's commit can wake it.
    worker = Worker(
        store_path, "q", lambda job: done.append(job.id), idle_poll_max_ms=600_000,
        until_empty=True,
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        wait_for(lambda: worker.stats.held >= 1)
        assert done == [] and q.stats().ready == 20
        resumed = time.monotonic()
        q.resume()
        thread.join(60)
        assert not thread.is_alive()
        assert time.monotonic() - resumed < 30  # woken by the commit, not by the 600 s poll
    finally:
        worker.stop()
        thread.join(60)
    assert sorted(done) == sorted(set(done)) and len(done) == 20


def test_a_worker_at_the_cap_waits_for_a_slot_instead_of_polling(store, store_path):
    q = store.queue("q", max_leased=1)
    q.enqueue_many(range(5))
    [outside] = q.claim(1)  # another consumer holds the only slot
    done: list[int] = []
    worker = Worker(
        store_path, "q", lambda job: done.append(job.id), concurrency=2,
        idle_poll_max_ms=600_000, until_empty=True,
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        wait_for(lambda: worker.stats.held >= 2)
        assert done == []
        q.ack(outside)  # frees the slot: the commit wakes the held slots
        thread.join(60)
        assert not thread.is_alive()
    finally:
        worker.stop()
        thread.join(60)
    assert len(done) == 4 and len(set(done)) == 4


def test_a_rate_limited_worker_sleeps_until_the_next_token(store, store_path):
    q = store.queue("q", rate_limit_per_s=20.0, rate_burst=1)
    q.enqueue_many(range(10))
    claims = []
    stats = Worker(
        store_path, "q", lambda job: claims.append(job.lease_expires_ms), concurrency=2,
        until_empty=True,
    ).run()
    assert stats.acked == 10 and stats.held >= 1
    # The bucket cannot be beaten: 10 claims at 20/s with a burst of 1 span >= 450 ms.
    assert max(claims) - min(claims) >= 450
    with Store(store_path) as other:
        assert other.queue("q").stats().ready == 0
