"""The replicated high-water mark without Litestream: the replicator's cycle is played by
hand (ReplicaCycles), so the cap, the writers' wait and the consumer rule are exact."""

from __future__ import annotations

import threading

import pytest

from spark_queue.errors import OffsetRangeError, ReplicationTimeoutError
from spark_queue.store import ReplicaCycles, Store, replica_status
from spark_queue.store.file.replica_mark import ReplicaWait


def cycle(cycles: ReplicaCycles) -> None:
    number, ends = cycles.begin()
    cycles.finish(number, ends)


def test_readers_of_a_replicated_store_see_only_the_mark(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.publish_many("t", [1, 2, 3])
        cycles = ReplicaCycles(path)
        cycles.mark("file:///replica")
        assert store.topic("t").bounds() == (0, 3)  # the mark starts at what the store held
        store.publish_many("t", [4, 5])
        assert store.topic("t").bounds() == (0, 3)
        assert store.topics()[0].latest == 3
        assert [e.value for e in store.read("t", 0)] == [1, 2, 3]
        cycle(cycles)
        assert store.topic("t").bounds() == (0, 5)
        assert [e.value for e in store.read("t", 3)] == [4, 5]
        store.publish("new", "x")
        # A topic made after the last cycle: nothing yet.
        assert store.topic("new").bounds() == (0, 0)
        cycle(cycles)
        assert store.topic("new").bounds() == (0, 1)
        assert cycles.unmark()
        cycles.close()


def test_a_saved_offset_never_passes_the_mark(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.publish_many("t", [1, 2, 3])
        cycles = ReplicaCycles(path)
        cycles.mark("file:///replica")
        store.publish_many("t", [4, 5])
        store.commit_offsets("c", {"t": 3})
        with pytest.raises(OffsetRangeError):
            store.commit_offsets("c", {"t": 4})
        cycles.close()


def test_a_replicated_write_returns_after_a_cycle_that_began_after_its_commit(tmp_path):
    path = str(tmp_path / "s.sqlite")
    cycles = ReplicaCycles(path)
    cycles.mark("file:///replica")
    begun = threading.Event()
    stop = threading.Event()
    seen: list[int] = []

    def replicator() -> None:
        while not stop.is_set():
            number, ends = cycles.begin()
            begun.set()
            seen.append(sum(ends.values()))
            cycles.finish(number, ends)
            stop.wait(0.01)

    thread = threading.Thread(target=replicator)
    thread.start()
    try:
        begun.wait(10)
        with Store(path, durability="replicated") as store:
            offset = store.publish("t", "x")
            status = replica_status(path)
            assert status is not None and status.behind == {"t": 0}
            assert store.topic("t").bounds() == (0, offset + 1)
    finally:
        stop.set()
        thread.join()
        cycles.close()


def test_a_replicated_write_with_no_replicator_fails_naming_the_command(tmp_path):
    path = str(tmp_path / "s.sqlite")
    with Store(path) as store:
        store.publish("t", "x")
        store.file.after_commit = ReplicaWait(store.file, timeout_ms=50)
        with pytest.raises(ReplicationTimeoutError, match="sqliteq replicate"):
            store.publish("t", "y")
        store.file.after_commit = None
        assert store.topic("t").bounds() == (0, 2)  # committed locally all the same


def test_a_replicated_store_leaves_wal_checkpoints_to_litestream(tmp_path):
    path = str(tmp_path / "s.sqlite")
    # SQLite's own autocheckpoint is off on every connection (the pragma reads 0): the
    # store's WAL hook stands in for it and checkpoints only an unreplicated store (what
    # each does: tests/store/file/test_open.py).
    with Store(path) as plain:
        assert plain.conn.execute("PRAGMA wal_autocheckpoint").fetchall()[0][0] == 0
    cycles = ReplicaCycles(path)
    cycles.mark("file:///replica")
    with Store(path) as store:
        assert store.conn.execute("PRAGMA wal_autocheckpoint").fetchall()[0][0] == 0
    cycles.close()


def test_a_replicated_enqueue_returns_after_a_cycle(tmp_path):
    path = str(tmp_path / "s.sqlite")
    cycles = ReplicaCycles(path)
    cycles.mark("file:///replica")
    stop = threading.Event()

    def replicator() -> None:
        while not stop.wait(0.01):
            number, ends = cycles.begin()
            cycles.finish(number, ends)

    thread = threading.Thread(target=replicator)
    thread.start()
    try:
        with Store(path, durability="replicated") as store:
            job = store.queue("q").enqueue({"n": 1})
            assert store.queue("q").stats().ready == 1 and job is not None
    finally:
        stop.set()
        thread.join()
        cycles.close()
