"""The idempotency-key sweep reads a bounded window of keys per write transaction, from a
cursor: a backlog of live keys past the window never holds the write lock for a scan."""

from __future__ import annotations

import threading
import time

import pytest

from spark_queue.store import Store
from spark_queue.store.file.steps import STEP_ROWS
from spark_queue.store.queues import queue_admin

OLD_MS = 1_000  # long before any window ends


def old_keys(store, queue, count, *, gone_every=0):
    """``count`` keys of ``queue`` enqueued at OLD_MS, all with one created_ms (the cursor
    walks the key part too), their jobs queued except every ``gone_every``-th (acked).
    Built by one INSERT ... SELECT each: 2,000,000 in a few seconds."""
    store.queue(queue, idempotency_window_ms=1_000)
    with store.write() as conn:
        [[qid]] = conn.execute("SELECT id FROM sq_queues WHERE name = ?", (queue,)).fetchall()
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "INSERT INTO sq_jobs (queue_id, available_at, idempotency_key, enqueued_ms, value, "
            "value_type) SELECT ?, 0, printf('k%09d', i), ?, 'x', 0 FROM n", (count, qid, OLD_MS))
        conn.execute(
            "INSERT INTO sq_job_keys (queue_id, idempotency_key, job_id, created_ms) "
            "SELECT queue_id, idempotency_key, id, enqueued_ms FROM sq_jobs WHERE queue_id = ?",
            (qid,))
        if gone_every:
            conn.execute("DELETE FROM sq_jobs WHERE queue_id = ? AND id % ? = 0",
                         (qid, gone_every))
    return qid


def test_the_key_sweep_reads_at_most_step_rows_keys_per_transaction(store):
    """Every key is past the window, only every third one's job is gone: the sweep forgets
    exactly those, in one transaction per STEP_ROWS keys read (it was one transaction that
    read them all, however few it deleted)."""
    qid = old_keys(store, "q", 2 * STEP_ROWS + STEP_ROWS // 2, gone_every=3)
    steps = []

    def may_step(conn):
        steps.append(1)
        return True

    queue_admin.sweep_expired(store.file, "q", may_step=may_step)
    # One TTL step, then three windows of keys (the last one short).
    assert len(steps) == 1 + 3
    kept = store.conn.execute(
        "SELECT count(*), sum(job_id % 3 = 0), "
        "sum(NOT EXISTS (SELECT 1 FROM sq_jobs WHERE id = job_id)) "
        "FROM sq_job_keys WHERE queue_id = ?", (qid,)).fetchall()
    live = 2 * STEP_ROWS + STEP_ROWS // 2 - (2 * STEP_ROWS + STEP_ROWS // 2) // 3
    assert kept == [(live, 0, 0)]


def test_keys_young_enough_stay_however_the_windows_fall(store):
    qid = old_keys(store, "q", STEP_ROWS + 10, gone_every=1)
    with store.write() as conn:  # ten keys of jobs gone, but inside the window
        conn.execute("UPDATE sq_job_keys SET created_ms = 4611686018427387904 WHERE queue_id = ? "
                     "AND idempotency_key <= 'k000000010'", (qid,))
    queue_admin.sweep_expired(store.file, "q")
    left = [r[0] for r in store.conn.execute("SELECT idempotency_key FROM sq_job_keys")]
    assert left == [f"k{i:09d}" for i in range(1, 11)]


@pytest.mark.slow
def test_a_housekeeping_run_over_2_000_000_live_keys_keeps_a_publishers_wait_short(
        store, store_path):
    """A paused queue's backlog past its idempotency window: 2,000,000 live keys, nothing
    to forget. The sweep read them all in one transaction, 0.96 s, a publisher beside it
    waiting 1.03 s; read a window per step, a publish waits one step at most."""
    old_keys(store, "paused", 2_000_000)
    store.publish("beside", "warm")  # the topic exists: the publisher only appends
    waits = []
    started, stop = threading.Event(), threading.Event()

    def publish_beside():
        with Store(store_path) as other:
            while not stop.is_set():
                begun = time.monotonic()
                other.publish("beside", "event")
                waits.append(time.monotonic() - begun)
                started.set()

    publisher = threading.Thread(target=publish_beside)
    publisher.start()
    try:
        assert started.wait(60)
        run = store.housekeeping.run()
    finally:
        stop.set()
        publisher.join()
    assert run is not None and run.complete
    assert store.conn.execute("SELECT count(*) FROM sq_job_keys").fetchall() == [(2_000_000,)]
    assert len(waits) > 10, waits  # it published all through the run
    assert max(waits) < 0.25, sorted(waits)[-5:]
