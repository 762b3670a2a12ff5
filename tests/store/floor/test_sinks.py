"""The sink ledger: a batch's rows and its ledger entry commit together, replays are skipped."""

from __future__ import annotations

import pytest

from spark_queue.errors import InvalidNameError, OffsetRangeError, PayloadError
from spark_queue.store.file.codec import BYTES, JSON, TEXT
from spark_queue.store.floor import sinks
from spark_queue.store.streams import topic_log


def publish(conn, topic, values):
    return len(topic_log.append_encoded(conn, topic, [topic_log.EncodedChunk(values, TEXT)]))


def test_a_batch_and_its_ledger_entry_commit_together(store):
    result = sinks.commit_batch(store.file, "q1", 0, lambda c: publish(c, "t", ["a", "b"]))
    assert result == sinks.SinkCommit("q1", 0, 2, False, 0)
    entry = sinks.ledger_entry(store.conn, "q1")
    assert (entry.last_batch_id, entry.rows) == (0, 2)
    assert [e.value for e in store.read("t")] == ["a", "b"]


def test_a_replayed_batch_is_skipped_and_writes_nothing(store):
    sinks.commit_batch(store.file, "q1", 0, lambda c: publish(c, "t", ["a"]))
    sinks.commit_batch(store.file, "q1", 1, lambda c: publish(c, "t", ["b"]))
    before = sinks.ledger_entry(store.conn, "q1")
    called = []
    for replay in (0, 1):
        result = sinks.commit_batch(store.file, "q1", replay, lambda c: called.append(1) or 1)
        assert result.skipped and result.rows == 0 and result.last_batch_id == 1
    assert not called, "a skipped batch must not even run its writer"
    assert sinks.ledger_entry(store.conn, "q1") == before
    assert [e.value for e in store.read("t")] == ["a", "b"]


def test_ledger_rows_count_every_row_the_sink_wrote(store):
    for batch, values in enumerate([["a"], ["b", "c"], []]):
        sinks.commit_batch(store.file, "s", batch, lambda c, v=values: publish(c, "t", v))
    assert sinks.ledger_entry(store.conn, "s").rows == 3
    assert sinks.ledger_entry(store.conn, "s").last_batch_id == 2


def test_sinks_are_independent(store):
    sinks.commit_batch(store.file, "a", 5, lambda c: publish(c, "t", ["x"]))
    result = sinks.commit_batch(store.file, "b", 0, lambda c: publish(c, "t", ["y"]))
    assert not result.skipped
    assert [e.sink_id for e in sinks.list_ledger(store.conn)] == ["a", "b"]


def test_a_failing_batch_leaves_neither_rows_nor_ledger_entry(store):
    def write(conn):
        publish(conn, "t", ["a", "b"])
        raise PayloadError("boom")

    with pytest.raises(PayloadError):
        sinks.commit_batch(store.file, "q1", 0, write)
    assert sinks.ledger_entry(store.conn, "q1") is None
    assert not store.topic("t").exists()
    # ...and the same batch id commits afterwards.
    assert not sinks.commit_batch(store.file, "q1", 0, lambda c: publish(c, "t", ["a"])).skipped


def test_a_one_off_write_has_no_ledger_entry(store):
    result = sinks.commit_batch(store.file, None, None, lambda c: publish(c, "t", ["a"]))
    assert result == sinks.SinkCommit(None, None, 1, False, None)
    assert sinks.list_ledger(store.conn) == []


@pytest.mark.parametrize(("sink_id", "batch_id"), [("s", None), (None, 0), ("s", -1), ("s", True)])
def test_sink_id_and_batch_id_go_together(store, sink_id, batch_id):
    with pytest.raises(OffsetRangeError):
        sinks.commit_batch(store.file, sink_id, batch_id, lambda c: 0)


def test_sink_ids_follow_the_naming_rule(store):
    with pytest.raises(InvalidNameError, match="invalid sink name"):
        sinks.commit_batch(store.file, "no spaces", 0, lambda c: 0)


def test_encoded_chunks_get_dense_offsets_across_chunks(store):
    with store.write() as conn:
        store_range = topic_log.append_encoded(
            conn,
            "t",
            [
                topic_log.EncodedChunk(
                    ["a", "b"], TEXT, keys=["k1", None], headers=['{"h":"1"}', None]
                ),
                topic_log.EncodedChunk([b"\x00", b"\x01"], BYTES),
                topic_log.EncodedChunk(['{"n":1}'], JSON),
            ],
            ts_ms=1234,
        )
    assert store_range == range(0, 5)
    events = store.read("t")
    assert [e.offset for e in events] == [0, 1, 2, 3, 4]
    assert [e.value for e in events] == ["a", "b", b"\x00", b"\x01", {"n": 1}]
    assert (events[0].key, events[0].headers, events[0].timestamp_ms) == ("k1", {"h": "1"}, 1234)
    assert store.topic("t").latest_offset() == 5


def test_routed_rows_get_dense_offsets_per_topic(store):
    store.publish("b", "existing")
    with store.write() as conn:
        ranges = topic_log.append_routed(
            conn, [topic_log.EncodedChunk(["1", "2", "3", "4"], TEXT, topics=["a", "b", "a", "b"])]
        )
    assert ranges == {"a": range(0, 2), "b": range(1, 3)}
    assert [e.value for e in store.read("a")] == ["1", "3"]
    assert [(e.offset, e.value) for e in store.read("b")] == [(0, "existing"), (1, "2"), (2, "4")]


def test_routed_rows_are_stored_as_each_topics_own_append_would_store_them(store):
    values = ["t0", b"\x00b1", "t2", "t3", b"b4", "t5"]
    keys = ["k0", "k1", None, "kk3", "k4", "k5"]
    headers = [None, '{"h":"1"}', None, None, '{"h":"4"}', None]
    routes = ["a", "b", "a", "a", "b", "c"]
    with store.write() as conn:
        ranges = topic_log.append_routed(conn, [
            topic_log.EncodedChunk(values[:3], TEXT, keys=keys[:3], headers=headers[:3],
                                topics=routes[:3]),
            topic_log.EncodedChunk(values[3:], TEXT, keys=keys[3:], headers=headers[3:],
                                topics=routes[3:]),
        ], ts_ms=77)
    assert ranges == {"a": range(0, 3), "b": range(0, 2), "c": range(0, 1)}
    with store.write() as conn:
        stored = conn.execute(
            "SELECT t.name, e.offset, e.ts_ms, e.key, typeof(e.key), e.value, typeof(e.value), "
            "e.value_type, e.headers FROM sq_events e JOIN sq_topics t ON t.id = e.topic_id "
            "ORDER BY t.name, e.offset"
        ).fetchall()
    expected = []
    for topic in ("a", "b", "c"):
        rows = [i for i, route in enumerate(routes) if route == topic]
        for offset, i in enumerate(rows):
            expected.append((topic, offset, 77, keys[i], "null" if keys[i] is None else "text",
                             values[i], "blob" if isinstance(values[i], bytes) else "text",
                             TEXT, headers[i]))
    assert stored == expected


@pytest.mark.parametrize("bad", [None, "bad name"])
def test_a_row_with_a_null_or_invalid_topic_fails_the_whole_batch(store, bad):
    with pytest.raises((PayloadError, InvalidNameError)), store.write() as conn:
        topic_log.append_routed(conn, [topic_log.EncodedChunk(["1", "2"], TEXT, topics=["a", bad])])
    assert not store.topic("a").exists()


def test_a_contiguous_writer_s_batch_past_the_ledger_s_next_is_refused_and_writes_nothing(
    store,
):
    from spark_queue.errors import StoreRewoundError

    for batch in range(5):
        sinks.commit_batch(store.file, "s", batch, lambda c: publish(c, "t", ["x"]),
                           contiguous=True)
    called = []
    with pytest.raises(StoreRewoundError, match=r"commits batch 10, but the ledger .* ends at "
                                                r"batch 4: batches 5 to 9"):
        sinks.commit_batch(store.file, "s", 10, lambda c: called.append(1) or 1,
                           contiguous=True)
    assert not called
    assert sinks.ledger_entry(store.conn, "s").last_batch_id == 4
    assert store.topic("t").bounds() == (0, 5)
    # Without contiguous (a user's own ids, foreachBatch) a gap is fine.
    assert not sinks.commit_batch(store.file, "s", 10, lambda c: publish(c, "t", ["y"])).skipped


def test_a_contiguous_writer_s_first_batch_may_be_any_id(store, caplog):
    with caplog.at_level("WARNING", logger="spark_queue.store"):
        result = sinks.commit_batch(store.file, "s", 7, lambda c: publish(c, "t", ["x"]),
                                    contiguous=True)
    assert (result.skipped, result.last_batch_id) == (False, 7)
    assert "batches 0 to 6 are missing" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="spark_queue.store"):
        sinks.commit_batch(store.file, "t0", 0, lambda c: 0, contiguous=True)
    assert caplog.text == ""
