"""Worker registrations: a row per running worker, alive while it beats, gone when it stops,
listed as lost when it dies without stopping; deleted with its queue."""

from __future__ import annotations

import pytest

from spark_queue.errors import UnknownQueueError
from spark_queue.store.file.connection import now_ms
from spark_queue.store.queues import queue_workers


def test_a_registered_worker_is_alive_while_it_beats_and_gone_when_it_unregisters(store):
    q = store.queue("q")
    q.configure()
    worker_id = q.register_worker(host="h", pid=7, concurrency=2, ttl_ms=60_000)
    [info] = q.workers()
    assert (info.id, info.queue, info.host, info.pid, info.concurrency) == (worker_id, "q", "h",
                                                                           7, 2)
    assert info.alive and info.jobs_held == 0 and info.started_ms == info.seen_ms
    assert q.worker_heartbeat(worker_id, jobs_held=3, ttl_ms=60_000)
    [info] = q.workers()
    assert info.jobs_held == 3 and info.seen_ms >= info.started_ms
    q.unregister_worker(worker_id)
    assert q.workers() == [] and not q.worker_heartbeat(worker_id, jobs_held=0, ttl_ms=1)


def test_a_worker_whose_heartbeat_expired_is_listed_as_lost_then_forgotten_a_day_later(store):
    q = store.queue("q")
    q.configure()
    now = now_ms()
    with store.file.write() as conn:
        lost = queue_workers.register(conn, "q", host="h", pid=1, concurrency=1, ttl_ms=10,
                                now=now - 1000)
    [info] = q.workers()
    assert info.id == lost and not info.alive
    with store.file.write() as conn:
        queue_workers.register(conn, "q", host="h", pid=2, concurrency=1, ttl_ms=10,
                               now=now + queue_workers.LOST_KEPT_MS)
    assert [w.pid for w in q.workers()] == [2]  # the first one's row was forgotten


def test_worker_rows_go_with_their_queue_and_need_an_existing_queue(store):
    q = store.queue("q")
    q.configure()
    q.register_worker(host="h", pid=1, concurrency=1, ttl_ms=60_000)
    store.queue("other").configure()
    store.delete_queue("q")
    assert store.queue("other").workers() == []
    assert store.conn.execute("SELECT count(*) FROM sq_workers").fetchall() == [(0,)]
    with pytest.raises(UnknownQueueError):
        store.queue("missing").register_worker(host="h", pid=1, concurrency=1, ttl_ms=1)
