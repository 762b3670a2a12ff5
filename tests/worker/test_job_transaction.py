"""job.transaction: a handler's writes commit with its job's ack, or not at all."""

from __future__ import annotations

import random
import threading
import time

import pytest

from benchmarks import crashes
from spark_queue.store import Job, Store, Transaction
from spark_queue.worker import Worker, WorkerJob


@pytest.fixture
def done_table(store):
    store.conn.execute("CREATE TABLE done (job INTEGER NOT NULL, attempt INTEGER)")
    return store


def rows(store: Store) -> list[tuple]:
    return store.conn.execute("SELECT job, attempt FROM done ORDER BY job, attempt").fetchall()


def test_a_handler_s_rows_and_events_commit_with_its_ack(done_table, store_path):
    ids = done_table.queue("q").enqueue_many(range(20))

    def handler(job: WorkerJob) -> None:
        assert isinstance(job, Job) and isinstance(job.transaction, Transaction)
        assert job.transaction is job.transaction  # one per job
        job.transaction.execute("INSERT INTO done VALUES (?, ?)", (job.id, job.attempts))
        job.transaction.publish("results", {"job": job.id})

    stats = Worker(store_path, "q", handler, concurrency=2, batch_size=4,
                   until_empty=True).run()
    assert stats.acked == 20 and stats.failed == 0
    assert rows(done_table) == [(i, 1) for i in ids]
    assert done_table.topic("results").bounds() == (0, 20)
    assert done_table.queue("q").counters().acked == 20


def test_a_handler_that_raises_keeps_nothing_and_its_retry_writes_once(done_table, store_path):
    q = done_table.queue("q", backoff_base_ms=0, backoff_cap_ms=0)
    [job_id] = q.enqueue_many(["x"])

    def handler(job: WorkerJob) -> None:
        job.transaction.execute("INSERT INTO done VALUES (?, ?)", (job.id, job.attempts))
        job.transaction.enqueue("followups", job.attempts)
        if job.attempts == 1:
            raise ValueError("first try fails after writing")

    stats = Worker(store_path, "q", handler, until_empty=True, idle_poll_max_ms=10).run()
    assert (stats.failed, stats.acked) == (1, 1)
    assert rows(done_table) == [(job_id, 2)]
    assert [j.payload for j in done_table.queue("followups").claim(5)] == [2]


def test_a_stale_worker_whose_job_was_reclaimed_commits_nothing(done_table, store_path):
    q = done_table.queue("q", visibility_timeout_ms=100)
    [job_id] = q.enqueue_many(["x"])
    reclaimed: list[Job] = []
    worker: Worker

    def handler(job: WorkerJob) -> None:
        # The lease runs out (no heartbeat in time) and another worker claims the job.
        with Store(store_path) as other:
            while not reclaimed:
                if time.time_ns() // 1_000_000 > job.lease_expires_ms:
                    reclaimed.extend(other.queue("q").claim(1, visibility_timeout_ms=60_000))
                else:
                    time.sleep(0.005)
        job.transaction.execute("INSERT INTO done VALUES (?, ?)", (job.id, job.attempts))
        job.transaction.publish("results", "from a stale handler")
        worker.stop()

    worker = Worker(store_path, "q", handler, visibility_timeout_ms=100, heartbeat_ms=60_000)
    stats = worker.run()
    assert (stats.acked, stats.lost_leases) == (0, 1)
    assert rows(done_table) == [] and not done_table.topic("results").exists()
    assert [j.id for j in reclaimed] == [job_id]
    assert q.stats().leased == 1  # still the other worker's


def test_a_handler_without_the_transaction_keeps_the_batched_at_least_once_ack(done_table,
                                                                                store_path):
    done_table.queue("q").enqueue_many(range(10))
    calls = []
    lock = threading.Lock()

    def handler(job: Job) -> None:
        with lock:
            calls.append(job.id)

    stats = Worker(store_path, "q", handler, batch_size=5, until_empty=True).run()
    assert stats.acked == 10 and sorted(calls) == list(range(1, 11))


@pytest.mark.slow
def test_a_worker_sigkilled_at_random_writes_exactly_one_row_per_job(tmp_path):
    # The acceptance run (5,000 jobs, 30 kills) is `python -m benchmarks crashes`.
    result = crashes.run_worker(str(tmp_path / "w.sqlite"), 300, 4, random.Random(7), 20.0,
                                transaction=True)
    assert result["duplicates"] == 0 and result["kills"] >= 1


def test_a_handler_may_use_job_transaction_as_a_block(done_table, store_path):
    done_table.queue("q").enqueue_many(range(3))

    def handler(job: WorkerJob) -> None:
        with job.transaction as tx:
            tx.execute("INSERT INTO done VALUES (?, ?)", (job.id, job.attempts))

    assert Worker(store_path, "q", handler, until_empty=True).run().acked == 3
    assert rows(done_table) == [(1, 1), (2, 1), (3, 1)]
