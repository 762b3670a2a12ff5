"""The default reader (``latencyMode=auto``) called as Spark's driver process calls it, no Spark.

Spark's streaming source runner calls ``partitions(start, end)`` and then, for
this reader, ``getCache(start, end)``: rows returned there travel with the
plan; None leaves the partitions to executors. These tests guard what users
rely on: a small batch ships exactly its rows and a large one ships none, the
same range always takes the same path with the same rows (replay), shipped
memory stays bounded, and the one partition of a shipped batch reads the same
rows by itself should an executor be asked.
"""

from __future__ import annotations

import pickle

import pytest

from spark_queue.connector.source import auto_reader
from spark_queue.connector.source.auto_reader import SqliteQueueAutoStreamReader
from spark_queue.connector.source.offsets import checkpoint_offsets as topics
from spark_queue.connector.source.partition_reader import read_partition
from spark_queue.connector.source.partitions import RangesPartition, StoreRangePartition
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema


def make_reader(store_path, **options):
    opts = parse_source_options({"path": store_path, **options}, streaming=True)
    assert opts.latency_mode == "auto"  # the default
    return SqliteQueueAutoStreamReader(opts, default_schema(opts))


def values(batches):
    return [v for batch in batches for v in batch.column("value").to_pylist()]


def offsets(batches):
    return [(t, o) for batch in batches
            for t, o in zip(batch.column("topic").to_pylist(),
                            batch.column("offset").to_pylist(), strict=True)]


def plan(reader, start, end):
    """What the runner does for one batch: (partitions, shipped rows or None)."""
    parts = reader.partitions(start, end)
    cache = reader.getCache(start, end)
    return parts, None if cache is None else list(cache)


def test_a_batch_within_the_limit_ships_exactly_its_rows_in_one_partition(store, store_path):
    store.publish_many("a", [f"a{i}".encode() for i in range(30)])
    store.publish_many("b", [f"b{i}".encode() for i in range(5)])
    reader = make_reader(store_path, topics="a,b", lowLatencyMaxRows=40)
    parts, shipped = plan(reader, {"a": 10, "b": 0}, {"a": 30, "b": 5})
    assert len(parts) == 1 and isinstance(parts[0], RangesPartition)
    assert offsets(shipped) == [("a", o) for o in range(10, 30)] + [("b", o) for o in range(5)]
    assert values(shipped)[:2] == [b"a10", b"a11"]


def test_a_batch_over_the_limit_ships_nothing_and_executors_read_every_row(store, store_path):
    store.publish_many("a", range(200))
    reader = make_reader(store_path, topic="a", lowLatencyMaxRows=100, rowsPerPartition=60)
    parts, shipped = plan(reader, {"a": 0}, {"a": 200})
    assert shipped is None
    assert all(isinstance(p, StoreRangePartition) for p in parts) and len(parts) == 4
    read = [b for p in parts for b in read_partition(reader.options, reader.schema, p)]
    assert [o for _, o in offsets(read)] == list(range(200))


def test_the_same_range_always_takes_the_same_path_with_the_same_rows(store, store_path):
    store.publish_many("a", range(50))
    first = make_reader(store_path, topic="a", lowLatencyMaxRows=50)
    _, shipped = plan(first, {"a": 0}, {"a": 50})
    store.publish_many("a", range(100))  # later events change nothing for a replay
    again = make_reader(store_path, topic="a", lowLatencyMaxRows=50)  # after a restart
    _, replayed = plan(again, {"a": 0}, {"a": 50})
    assert offsets(replayed) == offsets(shipped) == [("a", o) for o in range(50)]


def test_rows_are_shipped_only_for_the_range_just_planned(store, store_path):
    store.publish_many("a", range(10))
    reader = make_reader(store_path, topic="a")
    reader.partitions({"a": 0}, {"a": 5})
    assert reader.getCache({"a": 0}, {"a": 10}) is None  # another range: nothing
    reader.partitions({"a": 0}, {"a": 5})
    assert offsets(reader.getCache({"a": 0}, {"a": 5})) == [("a", o) for o in range(5)]
    assert reader.getCache({"a": 0}, {"a": 5}) is None  # handed over once, then dropped


def test_an_empty_range_plans_no_partition_and_ships_nothing(store, store_path):
    store.publish_many("a", range(3))
    reader = make_reader(store_path, topic="a")
    assert plan(reader, {"a": 3}, {"a": 3}) == ([], None)


def test_rows_over_the_memory_limit_are_left_to_executors(store, store_path, monkeypatch):
    store.publish_many("a", [b"x" * 1000 for _ in range(3_000)])
    monkeypatch.setattr(auto_reader, "SHIPPED_MAX_BYTES", 1_000_000)
    reader = make_reader(store_path, topic="a", lowLatencyMaxRows=5_000)
    parts, shipped = plan(reader, {"a": 0}, {"a": 3_000})
    assert shipped is None and all(isinstance(p, StoreRangePartition) for p in parts)


def test_a_shipped_batch_partition_reads_the_same_rows_in_an_executor(store, store_path):
    store.publish_many("a", range(20))
    store.publish_many("b", range(4))
    reader = make_reader(store_path, topics="a,b")
    parts, shipped = plan(reader, {"a": 5}, {"a": 20, "b": 4})
    copy = pickle.loads(pickle.dumps(reader))  # what an executor gets
    read = [b for p in parts for b in read_partition(copy.options, copy.schema, p)]
    assert offsets(read) == offsets(shipped)


def test_a_pickled_reader_carries_no_rows(store, store_path):
    store.publish_many("a", range(10))
    reader = make_reader(store_path, topic="a")
    reader.partitions({"a": 0}, {"a": 10})
    copy = pickle.loads(pickle.dumps(reader))
    assert copy.getCache({"a": 0}, {"a": 10}) is None


def test_lag_is_reported_from_the_last_planned_batch(store, store_path):
    store.publish_many("a", range(2_500))
    reader = make_reader(store_path, topic="a", maxRowsPerTrigger=1000)
    start = reader.initialOffset()
    end = reader.latestOffset(start, None)
    assert topics(end) == {"a": 1000}
    assert reader.reportLatestOffset() == {"a": 2_500}


@pytest.mark.parametrize("mode", ["throughput", "low"])
def test_other_latency_modes_are_not_this_reader(store_path, store, mode):
    from spark_queue.connector.datasource import SqliteQueueDataSource

    store.publish("a", b"x")
    source = SqliteQueueDataSource({"path": store_path, "topic": "a", "latencyMode": mode})
    schema = source.schema()
    if mode == "low":
        from spark_queue.connector.source.simple_reader import SqliteQueueLowLatencyStreamReader

        assert isinstance(source.streamReader(schema), SqliteQueueLowLatencyStreamReader)
    else:
        assert not isinstance(source.streamReader(schema), SqliteQueueAutoStreamReader)
    default = SqliteQueueDataSource({"path": store_path, "topic": "a"})
    assert isinstance(default.streamReader(schema), SqliteQueueAutoStreamReader)
