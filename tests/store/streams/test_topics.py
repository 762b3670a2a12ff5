"""Publishing and reading topics: payload round trips, offsets, snapshots."""

from __future__ import annotations

import pytest

from spark_queue.errors import (
    InvalidNameError,
    OffsetRangeError,
    PayloadError,
    UnknownTopicError,
)
from spark_queue.store import BYTES, JSON, TEXT, Record, Store


def test_first_offset_is_zero_and_each_next_is_plus_one(store):
    assert store.publish("t", "a") == 0
    assert store.publish_many("t", ["b", "c", "d"]) == range(1, 4)
    assert store.publish("t", "e") == 4
    assert [e.offset for e in store.read("t")] == [0, 1, 2, 3, 4]
    assert store.topic("t").bounds() == (0, 5)


@pytest.mark.parametrize(
    "value",
    [{"a": 1, "b": [1, 2.5, None, True]}, [1, "x"], 42, 1.5, True, None, "plain text",
     "{\"looks\": \"like json\"}", b"\x00\xffbytes", "ünïcödé ✓"],
)
def test_value_reads_back_as_published(store, value):
    store.publish("t", value)
    assert store.read("t")[0].value == value
    assert type(store.read("t")[0].value) is type(value)


def test_value_types_are_recorded_for_other_languages(store):
    store.publish_many("t", [b"x", "x", {"x": 1}])
    rows = store.conn.execute(
        "SELECT value_type, typeof(value) FROM sq_events ORDER BY offset").fetchall()
    assert rows == [(BYTES, "blob"), (TEXT, "text"), (JSON, "text")]


def test_key_headers_and_timestamp_round_trip(store):
    store.publish("t", "v", key="k1", headers={"h": "1"}, timestamp_ms=1234)
    store.publish_many("t", [Record("w", key=b"k2")])
    first, second = store.read("t")
    assert (first.key, first.headers, first.timestamp_ms) == ("k1", {"h": "1"}, 1234)
    assert (second.key, second.headers) == (b"k2", None)
    assert second.timestamp_ms > 1_700_000_000_000


def test_range_read_is_half_open_and_limited(store):
    store.publish_many("t", range(10))
    assert [e.value for e in store.read("t", 3, 7)] == [3, 4, 5, 6]
    assert [e.value for e in store.read("t", 3, limit=2)] == [3, 4]
    assert store.read("t", 10) == []
    assert store.read("t", 4, 4) == []


def test_arrow_read_matches_event_read(store):
    store.publish_many("t", [Record({"n": i}, key=f"k{i}") for i in range(5)])
    table = store.read_arrow("t", 1, 4, payload_format="string")
    assert table.column("offset").to_pylist() == [1, 2, 3]
    assert table.column("value").to_pylist() == ['{"n":1}', '{"n":2}', '{"n":3}']
    assert table.column("key").to_pylist() == ["k1", "k2", "k3"]
    binary = store.read_arrow("t", 0, limit=1)
    assert binary.column("value").to_pylist() == [b'{"n":0}']
    assert store.read_arrow("t", 5).num_rows == 0


def test_arrow_read_keeps_each_keys_stored_type_apart_from_its_bytes(store):
    store.publish_many("t", [Record(1, key="k"), Record(1, key=b"k"), Record(1), Record(1, key="")])
    table = store.read_arrow("t")
    assert table.column("key").to_pylist() == [b"k", b"k", None, b""]
    assert table.column("key_type").to_pylist() == [1, 0, 0, 1]  # value_type's numbers


def test_arrow_string_read_of_invalid_utf8_names_the_range(store):
    store.publish("t", b"\xff\xfe")
    with pytest.raises(PayloadError, match="not valid UTF-8"):
        store.read_arrow("t", payload_format="string")


def test_failed_batch_stores_nothing(store):
    store.publish("t", "before")
    with pytest.raises(PayloadError, match="item 2 of the batch"):
        store.publish_many("t", ["a", "b", object()])
    assert store.topic("t").bounds() == (0, 1)
    assert store.publish("t", "after") == 1


def test_offset_for_timestamp_finds_first_at_or_after(store):
    for ts in (100, 200, 200, 300):
        store.publish("t", ts, timestamp_ms=ts)
    assert store.topic("t").offset_for_timestamp(150) == 1
    assert store.topic("t").offset_for_timestamp(200) == 1
    assert store.topic("t").offset_for_timestamp(301) == 4
    assert store.topic("t").offset_for_timestamp(0) == 0


def test_topics_lists_counts(store):
    store.publish_many("b", range(3))
    store.topic("a").create()
    assert [(t.name, t.earliest, t.latest, t.count) for t in store.topics()] == [
        ("a", 0, 0, 0), ("b", 0, 3, 3)]


def test_reader_snapshot_is_stable_while_writer_appends(store_path):
    with Store(store_path) as reader, Store(store_path) as writer:
        writer.publish_many("t", range(100))
        with reader.snapshot():
            assert reader.topic("t").bounds() == (0, 100)
            writer.publish_many("t", range(50))
            assert reader.topic("t").bounds() == (0, 100)
            assert len(reader.read("t")) == 100
            assert reader.read_arrow("t").num_rows == 100
        assert reader.topic("t").bounds() == (0, 150)


@pytest.mark.parametrize("name", ["", "has space", "semi;colon", "x" * 201, "quote'", "ä"])
def test_invalid_topic_name_is_rejected_with_the_rule(store, name):
    with pytest.raises(InvalidNameError, match="letters, digits, '_', '.' and '-'"):
        store.publish(name, "v")


def test_longest_allowed_name_works(store):
    store.publish("a" * 200, "v")
    assert store.topic("a" * 200).latest_offset() == 1


@pytest.mark.parametrize(
    ("value", "fragment"),
    [(object(), "type object cannot be stored"), ({1, 2}, "type set"),
     (float("nan"), "float"), ({"k": object()}, "type dict")],
)
def test_unserializable_value_names_type_and_allowed(store, value, fragment):
    with pytest.raises(PayloadError, match=fragment) as info:
        store.publish("t", value)
    assert "JSON-serializable" in str(info.value)


def test_bad_key_and_headers_are_rejected(store):
    with pytest.raises(PayloadError, match="key must be str, bytes or None"):
        store.publish("t", "v", key=5)
    with pytest.raises(PayloadError, match="headers must map str to str"):
        store.publish("t", "v", headers={"a": 1})


@pytest.mark.parametrize(
    ("start", "end", "limit", "fragment"),
    [(-1, None, None, "start offset must be an integer from 0 to"),
     (5, 3, None, "end offset must be an integer >= start"),
     (0, None, -2, "limit must be an integer from 0 to")],
)
def test_negative_or_inverted_range_is_rejected(store, start, end, limit, fragment):
    store.publish("t", "v")
    with pytest.raises(OffsetRangeError, match=fragment):
        store.read("t", start, end, limit)
    with pytest.raises(OffsetRangeError, match=fragment):
        store.read_arrow("t", start, end, limit)


def test_unknown_topic_is_named(store):
    with pytest.raises(UnknownTopicError, match="'nope' does not exist"):
        store.read("nope")
