"""Offset-range splitting and row admission, as properties (no Spark session)."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_queue.connector.source.offsets import cap_rows
from spark_queue.connector.source.partitions import (
    ShippedRangePartition,
    StoreRangePartition,
    split_ranges,
)

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
    store_part = StoreRangePartition("t", 0, 10, "host", (1, 2))
    shipped = ShippedRangePartition("t", 0, 10, b"ipc")
    assert pickle.loads(pickle.dumps(store_part)) == store_part
    assert pickle.loads(pickle.dumps(shipped)) == shipped
