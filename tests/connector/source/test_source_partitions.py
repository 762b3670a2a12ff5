"""Offset-range splitting and row admission, as properties (no Spark session)."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_queue.connector.source.offsets import cap_rows
from spark_queue.connector.source.partition_planner import rows_per_partition
from spark_queue.connector.source.partitions import (
    MIN_DEFAULT_PARTITION_ROWS,
    RangesPartition,
    ShippedRangePartition,
    StoreRangePartition,
    default_rows_per_partition,
    reading_cpus,
    split_ranges,
)
from spark_queue.connector.source.read_shape import ReadShape, read_shape
from spark_queue.connector.source.source_options import parse_source_options

topic_names = st.sampled_from(["a", "b", "c", "d"])
ranges = st.dictionaries(
    topic_names,
    st.tuples(st.integers(0, 10_000), st.integers(0, 5_000)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=4,
)


@settings(deadline=None)  # shared, loaded CI machines
@given(ranges, st.integers(1, 3_000), st.integers(1, 50))
def test_split_covers_every_offset_exactly_once_within_limits(spec, rows_per_partition, min_parts):
    pieces = split_ranges(spec, rows_per_partition, min_parts)
    for topic, (start, end) in spec.items():
        mine = [p for p in pieces if p.topic == topic]
        covered = [o for p in mine for o in range(p.start, p.end)]
        assert covered == list(range(start, end))
        if mine:
            sizes = [p.rows for p in mine]
            assert max(sizes) - min(sizes) <= 1
    assert all(0 < p.rows <= rows_per_partition for p in pieces)
    total = sum(end - start for start, end in spec.values())
    assert len(pieces) >= min(min_parts, total)


def test_split_examples():
    assert [(p.start, p.end) for p in split_ranges({"a": (0, 10)}, 4, 1)] == [
        (0, 4), (4, 7), (7, 10)
    ]
    assert len(split_ranges({"a": (0, 5)}, 100, 4)) == 4
    assert split_ranges({"a": (3, 3)}, 10, 2) == []


@settings(deadline=None)  # shared, loaded CI machines
@given(st.dictionaries(topic_names, st.integers(0, 10_000), max_size=4), st.integers(1, 20_000))
def test_cap_rows_admits_exactly_the_limit_never_more_than_available(available, max_rows):
    admitted = cap_rows(available, max_rows)
    assert set(admitted) == set(available)
    assert all(0 <= admitted[t] <= available[t] for t in available)
    assert sum(admitted.values()) == min(max_rows, sum(available.values()))


def test_partitions_pickle_round_trip():
    shape = ReadShape("binary", include_headers=True, typed=False)
    store_part = StoreRangePartition("t", 0, 10, "host", (1, 2), shape)
    shipped = ShippedRangePartition("t", 0, 10, b"ipc", shape)
    ranges = RangesPartition((("a", 0, 10), ("b", 3, 4)), "host", (1, 2), shape)
    assert pickle.loads(pickle.dumps(store_part)) == store_part
    assert pickle.loads(pickle.dumps(shipped)) == shipped
    assert pickle.loads(pickle.dumps(ranges)) == ranges


def test_every_partition_carries_the_shape_planned_once(store, store_path, monkeypatch):
    """The executor reads in the shape the driver planned (payload format, headers,
    typed decoding), never recomputing it from its own copy of the options."""
    from pyspark.sql.types import LongType, StructField, StructType

    from spark_queue.connector.source import partition_planner
    from spark_queue.connector.source.source_schema import default_schema

    store.publish_many("t", [b'{"id": 1}'] * 10)
    computed = []
    monkeypatch.setattr(partition_planner, "read_shape",
                        lambda *a: computed.append(a) or read_shape(*a))
    typed = StructType([StructField("id", LongType())])
    for path in ("executor", "driver"):
        options = parse_source_options(
            {"path": store_path, "topic": "t", "readPath": path, "rowsPerPartition": "3",
             "valueFormat": "string", "includeHeaders": "true"}, streaming=False)
        for schema, shape in ((default_schema(options), ReadShape("string", True, False)),
                              (typed, ReadShape("binary", False, True))):
            computed.clear()
            with store.snapshot():
                parts = partition_planner.plan_range_partitions(
                    store, options, schema, {"t": (0, 10)})
            assert len(parts) == 4 and len(computed) == 1
            assert {p.shape for p in parts} == {shape}


@settings(deadline=None)
@given(st.integers(0, 10_000_000), st.integers(1, 64))
def test_the_default_split_gives_each_cpu_one_piece_never_a_tiny_one(total, cpus):
    rows = default_rows_per_partition(total, cpus)
    pieces = -(-total // rows)
    assert pieces <= cpus  # never more tasks than the driver's CPUs
    assert rows >= MIN_DEFAULT_PARTITION_ROWS  # never a piece the task cost would dwarf
    if total >= cpus * MIN_DEFAULT_PARTITION_ROWS:
        assert pieces == cpus  # a large range keeps every CPU busy


def test_a_given_rows_per_partition_wins_over_the_default():
    given = parse_source_options({"path": "/x", "topic": "a", "rowsPerPartition": "7"},
                                 streaming=False)
    assert rows_per_partition(given, {"a": (0, 1_000_000)}) == 7
    default = parse_source_options({"path": "/x", "topic": "a"}, streaming=False)
    assert rows_per_partition(default, {"a": (0, 1_000_000)}) == default_rows_per_partition(
        1_000_000, reading_cpus())
