"""Every write path x a replicated store: with ``durability="replicated"`` a path returns only
once the replica holds its commit, and with no replicator it raises ReplicationTimeoutError
within its timeout (the commit stands locally; the caller is not answered). All of them
commit through the one door (tests/store/file/test_commit_door.py); this is the row each
path adds to the composition. The replicator is played without Litestream by its cycle
protocol (begin, the replica holds it, finish), as tests/store/file/test_replica_mark.py
does; the Spark sink's row is tests/spark/test_sink_replicated.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from spark_queue import defaults
from spark_queue.errors import ReplicationTimeoutError
from spark_queue.store import Producer, ReplicaCycles, Store, replica_status
from spark_queue.store.floor.sinks import QueueRows
from spark_queue.store.queues.queue_jobs import NewJob
from spark_queue.worker import Worker, WorkerJob

WAIT_MS = 300


def _publish(store: Store, path: str) -> None:
    store.publish("t", {"n": 1})


def _publish_many(store: Store, path: str) -> None:
    store.publish_many("t", [1, 2, 3])


def _producer(store: Store, path: str) -> None:
    with Producer(path, durability="replicated") as producer:
        producer.publish("t", "from a producer")


def _enqueue(store: Store, path: str) -> None:
    store.queue("q").enqueue({"job": 1})


def _transaction(store: Store, path: str) -> None:
    with store.transaction() as tx:
        tx.execute("INSERT INTO orders (id) VALUES (1)")
        tx.publish("t", {"order": 1})
        tx.enqueue("q", {"order": 1})


def _job_transaction(store: Store, path: str) -> None:
    with Store(path) as plain:  # the job is there before the worker, replicated or not
        plain.queue("work").enqueue("x")

    def handler(job: WorkerJob) -> None:
        job.transaction.publish("t", {"done": job.id})

    stats = Worker(path, "work", handler, durability="replicated", until_empty=True).run()
    if stats.failed:
        raise ReplicationTimeoutError("the worker's commit did not reach the replica")


def _sink_batch(store: Store, path: str) -> None:
    store.commit_sink_batch("sink", 0, QueueRows("q", [NewJob({"row": 1})]))


def _commit_offsets(store: Store, path: str) -> None:
    store.commit_offsets("c", {"t": 0})


PATHS: dict[str, Callable[[Store, str], None]] = {
    "Store.publish": _publish,
    "Store.publish_many": _publish_many,
    "Producer": _producer,
    "Queue.enqueue": _enqueue,
    "store.transaction": _transaction,
    "job.transaction": _job_transaction,
    "Store.commit_sink_batch": _sink_batch,
    "Store.commit_offsets": _commit_offsets,
}


@pytest.fixture
def replicated(tmp_path, monkeypatch) -> Iterator[tuple[str, ReplicaCycles]]:
    monkeypatch.setattr(defaults, "REPLICATED_WAIT_MS", WAIT_MS)
    path = str(tmp_path / "s.sqlite")
    with Store(path) as store:
        store.conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        store.queue("q")
        store.publish("t", "before the mark")
    cycles = ReplicaCycles(path)
    cycles.mark("file:///replica")
    try:
        yield path, cycles
    finally:
        cycles.close()


@pytest.mark.parametrize("name", sorted(PATHS))
def test_a_replicated_write_with_no_replicator_is_not_acknowledged(replicated, name):
    path, _ = replicated
    with Store(path, durability="replicated") as store:
        started = time.monotonic()
        with pytest.raises(ReplicationTimeoutError):
            PATHS[name](store, path)
        waited_s = time.monotonic() - started
    assert waited_s >= WAIT_MS / 1000
    status = replica_status(path)
    assert status is not None and status.cycle_done == 0


@pytest.mark.parametrize("name", sorted(PATHS))
def test_a_replicated_write_returns_once_the_replica_holds_it(replicated, name):
    path, cycles = replicated
    stop = threading.Event()
    finished: list[int] = []

    def replicator() -> None:
        while not stop.is_set():
            number, ends = cycles.begin()
            cycles.finish(number, ends)
            finished.append(number)
            stop.wait(0.005)  # the pace of a replicator's cycles, not a wait for a result

    thread = threading.Thread(target=replicator)
    thread.start()
    try:
        with Store(path, durability="replicated") as store:
            PATHS[name](store, path)
            # A cycle that began after the path's last commit has finished: the replica
            # holds it, and so every topic's events are readable.
            status = replica_status(path)
            assert status is not None and set(status.behind.values()) == {0}, status
            assert store.topic("t").bounds()[1] == store.conn.execute(
                "SELECT next_offset FROM sq_topics WHERE name = 't'").fetchone()[0]
    finally:
        stop.set()
        thread.join()
    assert finished
