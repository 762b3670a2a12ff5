"""Where a read starts and ends, resolved against a real store (no Spark)."""

from __future__ import annotations

import pytest

from spark_queue.connector.source.offsets import ending_offsets, starting_offsets, subscribed_bounds
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.errors import OptionError
from spark_queue.store import Record


@pytest.fixture
def stamped(store, store_path):
    """Topic a: offsets 0..3 stamped 100, 200, 300, 400; topic b: offsets 0..1 at 150, 250."""
    store.publish_many("a", [Record(f"a{i}", timestamp_ms=100 * (i + 1)) for i in range(4)])
    store.publish_many("b", [Record(f"b{i}", timestamp_ms=150 + 100 * i) for i in range(2)])
    return store_path


def resolve(store, path, streaming=True, **options):
    opts = parse_source_options({"path": path, "topics": "a,b", **options}, streaming=streaming)
    with store.snapshot():
        bounds = subscribed_bounds(store, opts)
        start = starting_offsets(store, opts, bounds)
        end = ending_offsets(opts, bounds, store) if streaming is False else None
    return start, end


def test_starting_timestamp_starts_each_topic_at_its_first_event_at_or_after_it(store, stamped):
    assert resolve(store, stamped, startingTimestamp="200")[0] == {"a": 1, "b": 1}


def test_starting_offsets_by_timestamp_per_topic_with_kafkas_sentinels(store, stamped):
    by_time = '{"a": {"0": 301}, "b": {"0": -1}}'
    start, _ = resolve(store, stamped, startingOffsetsByTimestamp=by_time)
    assert start == {"a": 3, "b": 2}
    start, _ = resolve(store, stamped, startingOffsetsByTimestamp='{"a": -2}')
    assert start == {"a": 0, "b": 0}  # -2 = earliest; b, left out, starts at earliest


def test_a_start_time_after_the_last_event_starts_at_latest_or_fails_by_strategy(store, stamped):
    assert resolve(store, stamped, startingTimestamp="999")[0] == {"a": 4, "b": 2}
    with pytest.raises(OptionError, match="'startingTimestamp' asks for the first event of topic "
                       "'a' stamped at or after 999 ms, and there is none"):
        resolve(store, stamped, startingTimestamp="999", startingOffsetsByTimestampStrategy="error")
    # -1 asks for latest on purpose: not a missing match.
    start, _ = resolve(store, stamped, startingOffsetsByTimestamp='{"a": -1, "b": -1}',
                       startingOffsetsByTimestampStrategy="error")
    assert start == {"a": 4, "b": 2}


def test_ending_timestamp_ends_before_the_first_event_at_or_after_it(store, stamped):
    start, end = resolve(store, stamped, False, endingTimestamp="250")
    assert (start, end) == ({"a": 0, "b": 0}, {"a": 2, "b": 1})
    _, end = resolve(store, stamped, False, endingTimestamp="5000")
    assert end == {"a": 4, "b": 2}  # no event that late: latest


def test_ending_offsets_by_timestamp_per_topic(store, stamped):
    _, end = resolve(store, stamped, False, endingOffsetsByTimestamp='{"a": {"0": 300}}')
    assert end == {"a": 2, "b": 2}  # b, left out, ends at latest
    _, end = resolve(store, stamped, False, endingOffsetsByTimestamp='{"a": -1, "b": -2}')
    assert end == {"a": 4, "b": 0}


def test_nested_offset_json_resolves_like_the_flat_form(store, stamped):
    start, end = resolve(store, stamped, False, startingOffsets='{"a": {"0": 1}, "b": {"0": -2}}',
                         endingOffsets='{"a": {"0": 3}, "b": {"0": -1}}')
    assert (start, end) == ({"a": 1, "b": 0}, {"a": 3, "b": 2})
