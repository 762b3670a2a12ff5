"""``Store.publish`` keeps its topic's row between calls and trusts it only while the file
is unchanged since its own last commit (spark_queue/store/streams/publish_one.py).

Whatever wrote in between (another Store, another client's SQL, this Store's
other methods), the next publish reads the topic again: offsets stay dense,
limits and stray rows are seen, timestamp lookups stay exact.
"""

from __future__ import annotations

import pytest

from spark_queue.errors import CorruptStoreError, PayloadTooLargeError
from spark_queue.store import Record, Store
from spark_queue.store.streams import time_marks
from tests.store.streams.test_time_marks import assert_exact, assert_marks_hold


def statements_of(store: Store, call) -> list[str]:
    """The SQL statements ``call()`` ran on ``store``'s connection, first word each."""
    ran: list[str] = []

    def trace(cursor, sql, bindings) -> bool:
        ran.append(" ".join(sql.split()[:2]))
        return True

    store.conn.exec_trace = trace
    try:
        call()
    finally:
        store.conn.exec_trace = None
    return ran


def test_a_publish_to_a_known_topic_runs_begin_insert_update_commit_and_nothing_else(store):
    store.publish("t", "first")
    assert statements_of(store, lambda: store.publish("t", "second", key="k")) == [
        "BEGIN IMMEDIATE", "INSERT INTO", "UPDATE sq_topics", "COMMIT"]
    assert [(e.offset, e.value, e.key) for e in store.read("t")] == [
        (0, "first", None), (1, "second", "k")]


def test_a_single_publish_stores_what_publish_many_of_its_record_stores(store):
    records = [Record("text"), Record(b"\x00bytes", key=b"k"), Record({"j": [1]}, key="k"),
               Record(None, headers={"h": "v"}, timestamp_ms=5), Record("x", headers={})]
    for record in records:
        store.publish("one", record.value, key=record.key, headers=record.headers,
                      timestamp_ms=record.timestamp_ms)
    store.publish_many("many", records)
    columns = ("SELECT offset, key, typeof(key), value, typeof(value), value_type, headers, "
               "ts_ms = 5 FROM sq_events WHERE topic_id = (SELECT id FROM sq_topics "
               "WHERE name = ?) ORDER BY offset")
    one = store.conn.execute(columns, ("one",)).fetchall()
    assert one == store.conn.execute(columns, ("many",)).fetchall()
    assert len(one) == len(records)


def test_every_other_commit_makes_the_next_publish_read_its_topic_again(store_path):
    with Store(store_path) as ours, Store(store_path) as other:
        ours.publish("t", 0)
        other.publish("t", 1)  # another Store
        ours.publish("t", 2)
        with other.write() as conn:  # another client, through the view
            conn.execute("INSERT INTO sq_publish (topic, value) VALUES ('t', '3')")
        ours.publish("t", 4)
        ours.publish_many("t", [5, 6])  # this Store's other write path
        ours.publish("t", 7)
        assert [e.value for e in other.read("t")] == [0, 1, 2, "3", 4, 5, 6, 7]
        other.topic("t").set_limits(max_payload_bytes=4)
        with pytest.raises(PayloadTooLargeError):
            ours.publish("t", "12345")
        with other.write() as conn:  # a stray row above next_offset
            conn.execute("INSERT INTO sq_events (topic_id, offset, ts_ms, value, value_type) "
                         "VALUES (1, 9, 0, 'stray', 1)")
        with pytest.raises(CorruptStoreError, match="offsets 8..9, at or above its next_offset 8"):
            ours.publish("t", "ok")
        assert ours.topic("t").bounds() == (0, 8)
        with other.write() as conn:
            conn.execute("DELETE FROM sq_events WHERE offset = 9")
        assert ours.publish("t", "ok") == 8
        ours.topic("t").delete()
        assert ours.publish("t", "anew") == 0


def test_a_publish_that_rolls_back_leaves_nothing_kept_for_the_next(store, monkeypatch):
    """The failing transaction had moved the kept next offset; the next publish must not
    use it (it would leave a hole at the offset that was rolled back)."""
    monkeypatch.setattr(time_marks, "RUN", 3)
    store.publish("t", "a")
    store.publish("t", "b")
    original = time_marks.mark

    def fail_once(*args):
        monkeypatch.setattr(time_marks, "mark", original)
        raise OSError("disk trouble")

    monkeypatch.setattr(time_marks, "mark", fail_once)
    with pytest.raises(OSError, match="disk trouble"):
        store.publish("t", "c")  # the third event fills a run: marking it fails
    assert store.publish("t", "c") == 2
    assert [e.value for e in store.read("t")] == ["a", "b", "c"]
    assert_marks_hold(store)
    assert store.check().ok


def test_single_publishes_from_two_stores_and_another_client_keep_lookups_exact(
    store_path, monkeypatch
):
    monkeypatch.setattr(time_marks, "RUN", 4)
    with Store(store_path) as ours, Store(store_path) as other:
        for n in range(40):
            writer = ours if n % 3 else other
            writer.publish("t", n, timestamp_ms=(n * 37) % 100)
            if n % 7 == 0:
                with other.write() as conn:
                    conn.execute("INSERT INTO sq_publish (topic, value, ts_ms) "
                                 "VALUES ('t', 'x', ?)", (n * 11 % 100,))
        assert ours.topic("t").latest_offset() == 46
        assert_marks_hold(ours)
        assert_exact(ours, "t")
        assert ours.check().ok
