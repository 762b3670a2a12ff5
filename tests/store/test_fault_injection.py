"""Every public Store and Queue method under a fault: a named SparkQueueError, or success.

Four faults: the write lock held by another connection (busy timeout 50 ms),
a store opened read-only, pages of the file overwritten with garbage, and
the file unlinked under an open store. No raw apsw, OS or codec error may
reach the caller from any method.
"""

from __future__ import annotations

import os

import apsw
import pytest

from spark_queue.errors import SparkQueueError
from spark_queue.store import QueueRows, Store

STORE_CALLS = {
    "topic.create": lambda s, q, tmp: s.topic("t2").create(),
    "publish": lambda s, q, tmp: s.publish("t", {"n": 1}),
    "publish_many": lambda s, q, tmp: s.publish_many("t", [1, 2]),
    "read": lambda s, q, tmp: list(s.read("t", 0)),
    "read_arrow": lambda s, q, tmp: s.read_arrow("t", 0, 10),
    "read_arrow_payloads": lambda s, q, tmp: s.read_arrow_payloads("t", 0, 10, "binary", True),
    "topic.bounds": lambda s, q, tmp: s.topic("t").bounds(),
    "topic.earliest_offset": lambda s, q, tmp: s.topic("t").earliest_offset(),
    "topic.latest_offset": lambda s, q, tmp: s.topic("t").latest_offset(),
    "topic.offset_for_timestamp": lambda s, q, tmp: s.topic("t").offset_for_timestamp(0),
    "topics": lambda s, q, tmp: s.topics(),
    "topic.set_limits": lambda s, q, tmp: s.topic("t").set_limits(max_payload_bytes=1000),
    "topic.exists": lambda s, q, tmp: s.topic("t").exists(),
    "commit_offsets": lambda s, q, tmp: s.commit_offsets("c", {"t": 1}),
    "committed_offsets": lambda s, q, tmp: s.committed_offsets("c"),
    "consumers": lambda s, q, tmp: s.consumers(),
    "delete_consumer": lambda s, q, tmp: s.delete_consumer("c"),
    "topic.set_retention": lambda s, q, tmp: s.topic("t").set_retention(retention_rows=100),
    "housekeeping.prune": lambda s, q, tmp: s.housekeeping.prune(),
    "backup": lambda s, q, tmp: s.backup(str(tmp / "copy.sqlite")),
    "check": lambda s, q, tmp: s.check(),
    "data_version": lambda s, q, tmp: s.data_version(),
    "queues": lambda s, q, tmp: s.queues(),
    "queue_stats": lambda s, q, tmp: s.queue_stats(),
    "delete_queue": lambda s, q, tmp: s.delete_queue("other"),
    "housekeeping.sweep_expired": lambda s, q, tmp: s.housekeeping.sweep_expired(),
    "commit_sink_batch": lambda s, q, tmp: s.commit_sink_batch("sink", 7, QueueRows("q", [1])),
}
QUEUE_CALLS = {
    "configure": lambda s, q, tmp: q.configure(max_attempts=4),
    "pause": lambda s, q, tmp: q.pause(),
    "resume": lambda s, q, tmp: q.resume(),
    "admission": lambda s, q, tmp: q.admission(),
    "config": lambda s, q, tmp: q.config(),
    "exists": lambda s, q, tmp: q.exists(),
    "enqueue": lambda s, q, tmp: q.enqueue({"job": 1}),
    "enqueue_many": lambda s, q, tmp: q.enqueue_many([1, 2]),
    "claim": lambda s, q, tmp: q.claim(2),
    "ack_many": lambda s, q, tmp: q.ack_many([(1, 1)]),
    "nack_many": lambda s, q, tmp: q.nack_many([(1, 1)], "boom"),
    "release": lambda s, q, tmp: q.release([(1, 1)]),
    "extend": lambda s, q, tmp: q.extend([(1, 1)]),
    "stats": lambda s, q, tmp: q.stats(),
    "peek": lambda s, q, tmp: q.peek(),
    "purge": lambda s, q, tmp: q.purge(),
    "dead_letters": lambda s, q, tmp: q.dead_letters(),
    "requeue_dead": lambda s, q, tmp: q.requeue_dead(),
    "purge_dead": lambda s, q, tmp: q.purge_dead(),
}
CALLS = {**STORE_CALLS, **{f"Queue.{name}": call for name, call in QUEUE_CALLS.items()}}


def fill(path: str) -> None:
    with Store(path) as store:
        store.publish_many("t", [{"n": i} for i in range(2_000)])
        store.commit_offsets("c", {"t": 5})
        store.queue("q").enqueue_many(range(50))


def corrupt(path: str) -> None:
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        for page in range(2, size // 4096):
            f.seek(page * 4096 + 100)
            f.write(os.urandom(3000))


@pytest.fixture(params=["locked", "read-only", "corrupted", "vanished"])
def fault(request, tmp_path):
    """Set the fault up; yield how to open the store under it (opening may fail, named)."""
    path = str(tmp_path / "store.sqlite")
    fill(path)
    holder, opened = None, []
    if request.param == "locked":
        holder = apsw.Connection(path)
        holder.execute("BEGIN IMMEDIATE")
        options = {"busy_timeout_ms": 50}
    elif request.param == "read-only":
        options = {"readonly": True}
    elif request.param == "corrupted":
        corrupt(path)
        options = {}
    else:
        opened.append(Store(path))
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        options = {}

    def open_store() -> Store:
        if not opened:
            opened.append(Store(path, **options))
        return opened[0]

    yield open_store
    for store in opened:
        store.close()
    if holder is not None:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.parametrize("call", sorted(CALLS))
def test_every_public_method_raises_only_named_errors_under_a_fault(fault, call, tmp_path):
    try:
        store = fault()
        CALLS[call](store, store.queue("q"), tmp_path)
    except SparkQueueError:
        pass
    except Exception as exc:  # noqa: BLE001 - the point: name what leaked
        pytest.fail(f"{call} leaked {type(exc).__module__}.{type(exc).__name__}: {exc}")
