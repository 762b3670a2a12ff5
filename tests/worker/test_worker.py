"""The worker loop in-process: threads, failures, heartbeats, wake-up, busy store, stop."""

from __future__ import annotations

import logging
import os
import threading
import time

import apsw
import pytest

from spark_queue.errors import QueueConfigError
from spark_queue.store import Store
from spark_queue.worker import Worker, load_handler


def test_concurrent_slots_process_every_job_exactly_once(store, store_path):
    store.queue("q").enqueue_many(range(2000))
    seen: list[int] = []
    lock = threading.Lock()

    def handler(job):
        with lock:
            seen.append(job.id)

    stats = Worker(store_path, "q", handler, concurrency=4, batch_size=16, until_empty=True).run()
    assert stats.acked == 2000 and stats.failed == 0 and stats.lost_leases == 0
    assert sorted(seen) == sorted(set(seen)) and len(seen) == 2000
    assert store.queue("q").stats()[1:] == (0, 0, 0, 0, None)


def test_handler_exception_nacks_with_traceback_and_dead_letters_at_max_attempts(store, store_path):
    q = store.queue("q", max_attempts=2, backoff_base_ms=0, backoff_cap_ms=0)
    job_id = q.enqueue({"n": 1})
    calls = []

    def handler(job):
        calls.append(job.attempts)
        raise ValueError(f"cannot process {job.payload}")

    stats = Worker(store_path, "q", handler, until_empty=True).run()
    assert calls == [1, 2] and stats.failed == 2 and stats.acked == 0
    [dead] = q.dead_letters()
    assert dead.id == job_id
    assert "Traceback" in dead.last_error
    assert "ValueError: cannot process {'n': 1}" in dead.last_error


def test_heartbeat_keeps_a_long_job_leased(store, store_path):
    store.queue("q").enqueue("long")
    stolen = []

    def handler(job):
        time.sleep(1.0)  # the work: two and a half lease lengths
        with Store(store_path) as other:
            stolen.extend(other.queue("q").claim(1))

    stats = Worker(store_path, "q", handler, visibility_timeout_ms=400, heartbeat_ms=50,
                   until_empty=True).run()
    assert stolen == [] and stats.acked == 1 and stats.lost_leases == 0


def test_idle_worker_wakes_quickly_when_a_job_arrives(store, store_path):
    started = threading.Event()
    done = threading.Event()
    latency = []
    worker = None

    def handler(job):
        latency.append(time.monotonic() - job.payload)
        done.set()

    worker = Worker(store_path, "q", handler, idle_poll_max_ms=5_000, create_queue=True)
    thread = threading.Thread(target=lambda: (started.set(), worker.run()))
    thread.start()
    started.wait()
    time.sleep(0.3)  # let the worker reach its idle back-off
    store.queue("q").enqueue(time.monotonic())
    assert done.wait(5)
    worker.stop()
    thread.join(5)
    assert not thread.is_alive()
    assert latency[0] < 1.0  # woken by data_version, not by the 5 s idle_poll_max_ms


def test_worker_retries_a_busy_store_instead_of_dying(store, store_path):
    store.queue("q").enqueue_many(["a", "b"])
    blocker = apsw.Connection(store_path)
    blocker.execute("BEGIN IMMEDIATE")
    seen = []
    worker = Worker(
        store_path,
        "q",
        lambda job: seen.append(job.payload),
        busy_timeout_ms=20,
        batch_size=2,
        until_empty=True,
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    time.sleep(0.3)  # hold the write lock well past the worker's busy timeout
    assert seen == []
    blocker.execute("COMMIT")
    blocker.close()
    thread.join(10)
    assert not thread.is_alive() and sorted(seen) == ["a", "b"]


def test_stop_releases_claimed_jobs_that_did_not_start(store, store_path):
    store.queue("q").enqueue_many(range(10))
    entered = threading.Event()
    proceed = threading.Event()
    worker = None

    def handler(job):
        entered.set()
        proceed.wait(5)

    worker = Worker(store_path, "q", handler, batch_size=10, grace_ms=5_000)
    thread = threading.Thread(target=worker.run)
    thread.start()
    assert entered.wait(5)
    worker.stop()
    proceed.set()
    thread.join(5)
    assert worker.stats.acked == 1 and worker.stats.released == 9
    stats = store.queue("q").stats()
    assert (stats.ready, stats.leased) == (9, 0)
    assert {j.attempts for j in store.queue("q").peek(10)} == {0}


def test_stop_after_the_grace_period_releases_running_jobs(store, store_path):
    store.queue("q").enqueue("stuck")
    entered = threading.Event()
    release = threading.Event()

    def handler(job):
        entered.set()
        release.wait(10)

    worker = Worker(store_path, "q", handler, grace_ms=100)
    thread = threading.Thread(target=worker.run)
    thread.start()
    assert entered.wait(5)
    started = time.monotonic()
    worker.stop()
    thread.join(5)
    assert time.monotonic() - started < 2
    release.set()
    [job] = store.queue("q").peek(1)
    assert (job.state, job.attempts) == ("ready", 1)  # nacked at once, the attempt counted


def test_bad_worker_settings_and_handler_specs_fail_clearly(store_path):
    with pytest.raises(QueueConfigError, match="concurrency"):
        Worker(store_path, "q", print, concurrency=0)
    with pytest.raises(QueueConfigError, match="module:function"):
        load_handler("no_colon")
    with pytest.raises(QueueConfigError, match="cannot import"):
        load_handler("no_such_module_xyz:run")
    assert load_handler("json:dumps") is __import__("json").dumps


def test_the_worker_logs_durations_as_the_flags_and_tables_write_them(store, store_path, caplog):
    store.queue("q", visibility_timeout_ms=30_000).enqueue("x")
    with caplog.at_level(logging.INFO, logger="spark_queue.worker"):
        Worker(store_path, "q", lambda job: None, until_empty=True).run()
    assert "worker on queue 'q': 1 slots, lease 30s, heartbeat every 10s" in caplog.text
    assert " ms" not in caplog.text


def test_the_workers_start_line_comes_before_its_first_jobs_failure_line(
        store, store_path, caplog):
    store.queue("q", max_attempts=1).enqueue("x")

    def fail(job):
        raise ValueError("boom")

    with caplog.at_level(logging.INFO, logger="spark_queue.worker"):
        Worker(store_path, "q", fail, until_empty=True).run()
    lines = [r.getMessage() for r in caplog.records]
    start = next(i for i, line in enumerate(lines) if line.startswith("worker on queue 'q'"))
    failed = next(i for i, line in enumerate(lines) if "failed (attempt 1)" in line)
    assert start < failed, lines


def test_a_running_worker_is_listed_with_the_jobs_it_holds_and_unlisted_when_it_stops(
    store, store_path
):
    q = store.queue("q")
    q.enqueue("x")
    entered, release = threading.Event(), threading.Event()

    def handler(job):
        entered.set()
        release.wait(30)

    worker = Worker(store_path, "q", handler, concurrency=3, heartbeat_ms=5, until_empty=True)
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        assert entered.wait(30)
        deadline = time.monotonic() + 30
        while not [w for w in q.workers() if w.jobs_held == 1]:
            assert time.monotonic() < deadline, q.workers()
            time.sleep(0.01)
        [info] = q.workers()
        assert info.alive and info.concurrency == 3 and info.pid == os.getpid()
    finally:
        release.set()
        thread.join(30)
    assert q.workers() == [] and worker.stats.acked == 1
