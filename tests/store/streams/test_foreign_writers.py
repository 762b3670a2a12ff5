"""What another SQLite client can break, and how reads, check, prune and publish answer.

The "foreign writer" here is raw SQL on the store's own connection: the same
SQLite library, so the rows are exactly what any client could store.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from spark_queue.cli import main
from spark_queue.errors import CorruptStoreError, InvalidNameError
from spark_queue.store import Record, Store
from spark_queue.store.file.offset_views import OFFSET_VIEWS_SQL
from spark_queue.store.streams.arrow_read import verify_offsets


def reads(store: Store, topic: str, start: int = 0, end: int | None = None):
    """Every read path the store offers, over one range."""
    stop = store.topic(topic).latest_offset() if end is None else end
    return [
        lambda: store.read(topic, start, end),
        lambda: store.read_arrow(topic, start, end),
        lambda: store.read_arrow_payloads(topic, start, stop),
        lambda: store.read_arrow_payloads(topic, start, stop, "string", headers=True),
    ]


def check_problems(store: Store) -> str:
    report = store.check()
    assert not report.ok
    return "\n".join(report.problems)


@pytest.mark.parametrize(("deleted", "missing"), [(2, "offsets 2 are missing"),
                                                  (4, "offsets 4 are missing")])
def test_a_hole_in_offsets_fails_every_read_naming_topic_and_offsets(store, deleted, missing):
    store.publish_many("t", [f"v{i}" for i in range(5)])
    store.publish_many("other", ["fine"])
    store.conn.execute("DELETE FROM sq_events WHERE offset = ?", (deleted,))
    for read in reads(store, "t"):
        with pytest.raises(CorruptStoreError, match=rf"topic 't': .*not dense: {missing}"):
            read()
    # Never a renumbered row: v3 is never served as offset 2.
    assert "no longer dense" in check_problems(store)
    # Ranges that do not cross the hole, and other topics, still read.
    assert [e.value for e in store.read("t", 0, 2)] == ["v0", "v1"]
    assert [e.value for e in store.read("other")] == ["fine"]


def test_a_hole_below_the_range_start_is_found_too(store):
    store.publish_many("t", range(6))
    store.conn.execute("DELETE FROM sq_events WHERE offset IN (2, 3)")
    with pytest.raises(CorruptStoreError, match=r"offsets 2\.\.3 are missing"):
        store.read_arrow_payloads("t", 2, 6)
    assert store.read_arrow_payloads("t", 4, 6).column("offset").to_pylist() == [4, 5]


def test_a_duplicate_offset_fails_reads(store):
    store.publish_many("t", range(4))
    # Only a client that rebuilt the table without its primary key can store a duplicate.
    store.conn.execute(
        "DROP VIEW sq_publish; DROP VIEW sq_save_offset; DROP VIEW sq_topic_ends; "
        "CREATE TABLE loose AS SELECT * FROM sq_events; DROP TABLE sq_events; "
        "ALTER TABLE loose RENAME TO sq_events; "
        "INSERT INTO sq_events SELECT * FROM sq_events WHERE offset = 1"
    )
    store.conn.execute(OFFSET_VIEWS_SQL)  # the readers' end, back on the rebuilt table
    for read in reads(store, "t"):
        with pytest.raises(CorruptStoreError, match="topic 't'"):
            read()
    with pytest.raises(CorruptStoreError, match="offset 1 appears twice"):
        store.read("t", 0, 4)
    # A duplicate hiding a hole: the count is right, the offsets are not.
    store.conn.execute("DELETE FROM sq_events WHERE offset = 2")
    for read in reads(store, "t"):
        with pytest.raises(CorruptStoreError, match="offset 1 appears twice"):
            read()
    assert "sq_events has lost its primary key" in check_problems(store)


def test_out_of_order_offsets_are_rejected_by_the_bulk_check():
    with pytest.raises(CorruptStoreError, match="offset 1 comes after 2"):
        verify_offsets("t", pa.array([0, 2, 1, 3], pa.int64()), 0, 4)
    with pytest.raises(CorruptStoreError, match="offset 1 appears twice"):
        verify_offsets("t", pa.array([0, 1, 1, 3], pa.int64()), 0, 4)
    verify_offsets("t", pa.array([5, 6, 7], pa.int64()), 5, 8)


def test_events_inserted_without_advancing_next_offset_are_found_and_stop_the_next_publish(
    store,
):
    store.publish_many("t", ["a", "b"])
    store.conn.execute(
        "INSERT INTO sq_events (topic_id, offset, ts_ms, value, value_type) "
        "VALUES (1, 2, 0, 'stray', 1)"
    )
    assert "at or above next_offset 2" in check_problems(store)
    assert [e.value for e in store.read("t")] == ["a", "b"]  # invisible, as promised
    with pytest.raises(CorruptStoreError, match=r"offsets 2.*next_offset 2.*Nothing was published"):
        store.publish("t", "c")
    with pytest.raises(CorruptStoreError, match="next_offset"):
        store.publish_many("t", ["c", "d"])
    assert store.topic("t").bounds() == (0, 2)


def test_a_topic_named_against_the_rule_never_stops_prune_or_other_reads(store):
    store.publish_many("good", range(10))
    store.conn.execute("INSERT INTO sq_topics (name, created_ms) VALUES ('bad name!', 0)")
    store.conn.execute(
        "INSERT INTO sq_events SELECT 2, offset, ts_ms, key, value, value_type, headers "
        "FROM sq_events WHERE topic_id = 1"
    )
    store.conn.execute("UPDATE sq_topics SET next_offset = 10 WHERE id = 2")
    results = {r.topic: r.deleted for r in store.housekeeping.prune(retention_rows=4)}
    assert results == {"bad name!": 6, "good": 6}
    assert store.topic("good").bounds() == (6, 10)
    assert "invalid topic name 'bad name!'" in check_problems(store)
    with pytest.raises(InvalidNameError):
        store.read("bad name!")


def test_headers_that_are_not_an_object_of_strings_fail_reads_with_a_named_error(store, capsys):
    store.publish_many("t", [Record("a", headers={"h": "1"}), "b"])
    store.publish_many("other", [Record("fine", headers={"h": "v"})])
    first_of_t = "WHERE topic_id = 1 AND offset = 0"
    store.conn.execute("UPDATE sq_events SET headers = '{\"h\": 1}' " + first_of_t)
    for read in (lambda: store.read("t"), lambda: store.read_arrow("t"),
                 lambda: store.read_arrow_payloads("t", 0, 2, headers=True)):
        with pytest.raises(CorruptStoreError, match="topic 't' offset 0: headers hold a value"):
            read()
    # Without headers the bulk read does not look at them; other topics are unaffected.
    assert store.read_arrow_payloads("t", 0, 2).num_rows == 2
    assert store.read("other")[0].headers == {"h": "v"}
    assert "headers hold a value that is not a string (offsets 0)" in check_problems(store)
    for bad in ("[1, 2]", "not json"):
        store.conn.execute("UPDATE sq_events SET headers = ? " + first_of_t, (bad,))
        with pytest.raises(CorruptStoreError, match="topic 't' offset 0: headers are"):
            store.read("t")
    code = main(["tail", store.path, "t"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("sqliteq tail: topic 't' offset 0") and err.count("\n") == 1


def test_a_json_typed_value_that_is_not_json_fails_reads_and_tail_with_a_named_error(
    store, capsys,
):
    store.publish_many("t", [{"ok": 1}, {"ok": 2}])
    store.conn.execute("UPDATE sq_events SET value = 'not json' WHERE offset = 1")
    with pytest.raises(CorruptStoreError, match="topic 't' offset 1: value_type 2 .* not valid"):
        store.read("t")
    assert store.read("t", 0, 1)[0].value == {"ok": 1}
    assert "value_type 2 (json) holds text that is not valid JSON (offsets 1)" in check_problems(
        store
    )
    code = main(["tail", store.path, "t", "--json"])
    out, err = capsys.readouterr()
    assert code == 1 and err.startswith("sqliteq tail: topic 't' offset 1") and err.count("\n") == 1


def test_check_reports_values_whose_storage_class_breaks_their_value_type(store):
    store.publish_many("t", [b"bytes", "text", Record("k", key="key")])
    store.conn.execute("UPDATE sq_events SET value = 'now text' WHERE topic_id = 1 AND offset = 0")
    store.conn.execute("UPDATE sq_events SET value = 42 WHERE offset = 1")
    store.conn.execute("UPDATE sq_events SET key = 4.5 WHERE offset = 2")
    problems = check_problems(store)
    assert "value_type 0 (bytes) holds a text value, not a BLOB (offsets 0)" in problems
    assert "value_type 1 (text) holds a integer value, not TEXT (offsets 1)" in problems
    assert "key is a real, not TEXT, BLOB or NULL (offsets 2)" in problems


def test_a_consumer_offset_beyond_latest_shows_no_negative_lag_and_is_reported(store):
    store.publish_many("t", range(3))
    store.commit_offsets("c", {"t": 3})
    store.conn.execute("UPDATE sq_consumers SET next_offset = 9")
    [info] = store.consumers()
    assert (info.next_offset, info.latest, info.lag) == (9, 3, 0)
    assert "consumer 'c' of topic 't': saved offset 9 is beyond" in check_problems(store)


def test_a_clean_store_passes_check(store):
    store.publish_many("t", [Record({"a": 1}, key=b"k", headers={"h": "v"}), b"x", "y", None])
    store.commit_offsets("c", {"t": 4})
    store.topic("t").prune(retention_rows=2, force=True)
    assert store.check() == (True, [], ())
