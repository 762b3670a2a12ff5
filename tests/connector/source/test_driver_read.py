"""The driver's threaded read of the pieces it ships equals reading each piece in the
caller's snapshot, also when retention removes a piece's rows meanwhile."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from spark_queue.connector.source import driver_read
from spark_queue.connector.source.partitions import OffsetRange
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.store import Record, Store


def _tables(shipped: list[bytes]) -> list[pa.Table]:
    return [pa.ipc.open_stream(pa.py_buffer(data)).read_all() for data in shipped]


@pytest.fixture
def threaded(monkeypatch):
    """Threads even for a small range, on two CPUs whatever the machine has."""
    monkeypatch.setattr(driver_read, "PARALLEL_MIN_ROWS", 0)
    monkeypatch.setattr(driver_read, "reading_cpus", lambda: 2)


def _pieces(topic: str, total: int, size: int) -> list[OffsetRange]:
    return [OffsetRange(topic, s, min(s + size, total)) for s in range(0, total, size)]


@pytest.mark.parametrize("fmt", ["binary", "string"])
@pytest.mark.parametrize("headers", [False, True])
def test_threaded_pieces_equal_the_callers_read_of_each(threaded, store, store_path, fmt,
                                                        headers):
    store.publish_many("t", [Record(f"v{i}", key=None if i % 3 else "k",
                                    headers={"h": str(i)} if i % 2 else None)
                             for i in range(1000)])
    options = parse_source_options({"path": store_path, "topic": "t"}, streaming=True)
    pieces = _pieces("t", 1000, 150)
    with store.snapshot():
        shipped = driver_read.shipped_pieces(store, options, pieces, fmt, headers)
        expected = [store.read_arrow_payloads(p.topic, p.start, p.end, fmt, headers)
                    for p in pieces]
    assert [t.to_pylist() for t in _tables(shipped)] == [t.to_pylist() for t in expected]


def test_a_piece_retention_removed_meanwhile_is_read_from_the_callers_snapshot(
    threaded, store, store_path
):
    store.publish_many("t", range(1000))
    options = parse_source_options({"path": store_path, "topic": "t"}, streaming=True)
    pieces = _pieces("t", 1000, 250)
    with store.snapshot():
        store.read_arrow_payloads("t", 0, 1)  # the snapshot starts at its first read
        with Store(store_path) as other:
            other.topic("t").prune(retention_rows=600)  # offsets 0-399 go
        shipped = driver_read.shipped_pieces(store, options, pieces, "binary", False)
    tables = _tables(shipped)
    assert [t.column("offset").to_pylist() for t in tables] == [
        list(range(p.start, p.end)) for p in pieces
    ]
    assert store.read_arrow_payloads("t", 0, 1000).num_rows == 600


def test_no_shipped_partition_outgrows_a_task_and_together_they_hold_every_row_once(
    monkeypatch, store, store_path
):
    """A shipped partition rides inside its task, which Spark refuses past
    spark.rpc.message.maxSize: a piece over the byte bound is halved until it fits (or is
    one row), and the partitions still cover the range exactly, in order."""
    from pyspark.sql.types import StructType

    from spark_queue.connector.source import partition_planner
    from spark_queue.connector.source.partitions import ShippedRangePartition

    noise = random.Random(35)  # incompressible: the bound is on the compressed bytes
    store.publish_many("t", [noise.randbytes(100 + i % 50) for i in range(3000)])
    store.publish_many("t", [noise.randbytes(20_000)])  # one row over the bound
    bound = 8_000
    monkeypatch.setattr(partition_planner, "SHIPPED_PARTITION_MAX_BYTES", bound)
    options = parse_source_options(
        {"path": store_path, "topic": "t", "readPath": "driver", "rowsPerPartition": "1000"},
        streaming=False)
    with store.snapshot():
        parts = partition_planner.plan_range_partitions(
            store, options, StructType(), {"t": (0, 3001)})
    assert all(isinstance(p, ShippedRangePartition) for p in parts)
    assert all(len(p.arrow_ipc) <= bound or p.end - p.start == 1 for p in parts)
    assert len(parts) > 4  # the 1,000-row pieces were split
    assert [(p.start, p.end) for p in parts] == sorted((p.start, p.end) for p in parts)
    assert parts[0].start == 0 and parts[-1].end == 3001
    assert all(a.end == b.start for a, b in zip(parts, parts[1:], strict=False))
    offsets = [o for t in _tables([p.arrow_ipc for p in parts])
               for o in t.column("offset").to_pylist()]
    assert offsets == list(range(3001))
