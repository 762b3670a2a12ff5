"""The protocol for other languages (docs/file-format.md), run through another SQLite library.

tests/store/foreign_producer.py runs that page's SQL verbatim in Python's
stdlib ``sqlite3``, always in a subprocess: this process holds apsw
connections and must never load a second SQLite library.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import apsw
import pytest

from spark_queue.errors import PayloadTooLargeError
from spark_queue.store import Record, Store
from spark_queue.store.file.schema import latest_version

PRODUCER = str(pathlib.Path(__file__).with_name("foreign_producer.py"))
TOPIC_LIMITED = "limited"  # foreign_producer.py's topic in mode "limit"


def foreign(*args: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, PRODUCER, *map(str, args)],
                            stdout=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_view_and_hand_written_sql_publish_alongside_publish_many_with_dense_offsets(store_path):
    with Store(store_path) as store:
        store.topic("mixed").create()
        procs = [foreign(store_path, mode, p, 2000, 50) for p, mode in ((1, "view"), (2, "sql"))]
        ours = 0
        while any(proc.poll() is None for proc in procs):
            store.publish_many("mixed", [{"p": 0, "seq": ours + i} for i in range(25)])
            ours += 25
        assert [proc.communicate(timeout=120)[0].split() for proc in procs] == [["done"]] * 2
        events = store.read("mixed")
        assert [e.offset for e in events] == list(range(ours + 4000))
        for producer, count in ((0, ours), (1, 2000), (2, 2000)):
            mine = [e for e in events if e.value["p"] == producer]
            assert [e.value["seq"] for e in mine] == list(range(count))
        foreign_events = [e for e in events if e.value["p"]]
        assert all(e.key == f"{e.value['p']}-{e.value['seq']}" for e in foreign_events)
        assert {e.headers and e.headers["producer"] for e in foreign_events} == {None, "1", "2"}
        assert store.check() == (True, [], ())


def test_the_documented_sql_creates_reads_and_saves_consumer_offsets_within_the_rules(store_path):
    with Store(store_path) as store:
        store.publish_many("mixed", [{"n": 0}, Record("text", key="k", headers={"h": "v"}), b"b"])
        store.queue("jobs").configure()
    proc = foreign(store_path, "protocol")
    result = json.loads(proc.communicate(timeout=60)[0])
    assert result["latest"] == 3
    assert result["rows"] == [[1, "text", 1, '{"h":"v"}'], [2, {"blob": "62"}, 0, None]]
    assert result["saved"] == [2, 2, "sq_save_offset"]  # never back, never past latest
    assert result["topics"] == ["fresh", "mixed"]
    assert result["jobs"] == [{"n": 1}, {"n": 3}]  # the duplicate key inserted nothing
    with Store(store_path) as store:
        assert store.committed_offsets("foreign") == {"mixed": 2}
        assert [j.payload for j in store.queue("jobs").claim(5)] == [{"n": 1}, {"n": 3}]
        assert store.check().ok


def test_the_publish_view_assigns_dense_offsets_and_types(store):
    store.publish("t", "by the store")
    store.conn.execute(
        "INSERT INTO sq_publish (topic, key, value, value_type, headers, ts_ms) VALUES "
        "('t', 'k', '{\"a\": 1}', 2, '{\"h\": \"v\"}', 1234), ('t', NULL, x'00ff', NULL, NULL, "
        "NULL), ('u', NULL, 'text', NULL, NULL, NULL)"
    )
    assert store.publish("t", "after") == 3
    events = store.read("t")
    assert [(e.offset, e.value) for e in events] == [
        (0, "by the store"), (1, {"a": 1}), (2, b"\x00\xff"), (3, "after")]
    assert (events[1].key, events[1].headers, events[1].timestamp_ms) == ("k", {"h": "v"}, 1234)
    assert abs(events[2].timestamp_ms - events[3].timestamp_ms) < 60_000
    assert store.topic("u").bounds() == (0, 1)
    assert store.check().ok


@pytest.mark.parametrize(
    ("columns", "values", "message"),
    [
        ("topic, value", "'bad name', 'v'", "topic must be 1 to 200 characters"),
        ("topic, value", "NULL, 'v'", "topic must be"),
        ("topic, offset, value", "'t', 7, 'v'", "offset is assigned by the store"),
        ("topic, value, ts_ms", "'t', 'v', '2024-01-01'", "ts_ms must be an INTEGER"),
        ("topic, key, value", "'t', 5, 'v'", "key must be TEXT, BLOB or NULL"),
        ("topic, value, value_type", "'t', 'text', 0", "value does not fit value_type"),
        ("topic, value, value_type", "'t', x'00', 1", "value does not fit value_type"),
        ("topic, value", "'t', 42", "value does not fit value_type"),
        ("topic, value, value_type", "'t', 'not json', 2", "value does not fit value_type"),
        ("topic, value, value_type", "'t', 'v', 3", "value does not fit value_type"),
        ("topic, value, headers", "'t', 'v', '{\"h\": 1}'", "headers must be NULL or a JSON"),
        ("topic, value, headers", "'t', 'v', '[\"h\"]'", "headers must be NULL or a JSON"),
        ("topic, value, headers", "'t', 'v', 'nope'", "headers must be NULL or a JSON"),
    ],
)
def test_the_publish_view_refuses_rows_that_break_the_format_and_writes_nothing(
    store, columns, values, message
):
    store.publish("t", "first")
    with pytest.raises(apsw.ConstraintError, match=f"sq_publish: {message}"):
        store.conn.execute(f"INSERT INTO sq_publish ({columns}) VALUES ({values})")
    assert store.topic("t").bounds() == (0, 1)
    assert [t.name for t in store.topics()] == ["t"]


def test_a_multi_row_insert_into_the_view_is_all_or_nothing(store):
    with pytest.raises(apsw.ConstraintError, match="sq_publish: topic must be"):
        store.conn.execute("INSERT INTO sq_publish (topic, value) VALUES ('t', 'ok'), ('t!', 'v')")
    assert store.topics() == []


LIMIT_REFUSAL = "sq_publish: value is larger than its topic's max_payload_bytes"


def test_the_publish_view_refuses_a_value_over_its_topics_limit_as_store_publish_does(store):
    """Counted as store/file/payload_limits.py counts (bytes as stored, UTF-8 for text, keys
    and headers not), refused with RAISE(ABORT): the caller's transaction keeps its earlier
    rows and the next accepted row takes the next offset."""
    store.publish("t", "first")
    store.topic("t").configure(max_payload_bytes=10)
    insert = ("INSERT INTO sq_publish (topic, key, value, value_type, headers) "
              "VALUES (?, ?, ?, ?, ?)")
    with store.conn:  # the caller's transaction, open across the refusals
        store.conn.execute(insert, ("t", "k" * 50, "é" * 5, None, '{"h": "' + "v" * 50 + '"}'))
        for value, value_type in (("é" * 5 + "x", None), (b"\x00" * 11, None),
                                  ('{"a": "12345"}', 2), ("x" * 11, 1)):
            with pytest.raises(apsw.ConstraintError, match=LIMIT_REFUSAL):
                store.conn.execute(insert, ("t", None, value, value_type, None))
        with pytest.raises(apsw.ConstraintError, match=LIMIT_REFUSAL):  # all or nothing
            store.conn.execute("INSERT INTO sq_publish (topic, value) VALUES ('t', 'ok'), "
                               "('t', '12345678901')")
        store.conn.execute(insert, ("t", None, b"\x00" * 10, None, None))  # at the limit
        store.conn.execute(insert, ("t", None, None, None, None))
    assert [(e.offset, e.value) for e in store.read("t")] == [
        (0, "first"), (1, "é" * 5), (2, b"\x00" * 10), (3, None)]
    with pytest.raises(PayloadTooLargeError, match="over the max_payload_bytes of 10"):
        store.publish("t", "é" * 5 + "x")  # the same value, the same verdict
    store.conn.execute(insert, ("u", None, "x" * 100, None, None))  # no limit, new topic
    assert store.check().ok


def test_a_store_of_version_11_gets_the_publish_views_limit_when_migrated(tmp_path):
    path = tmp_path / "v11.sqlite"
    shutil.copyfile(pathlib.Path(__file__).parents[1] / "fixtures/stores/v11.sqlite", path)
    with Store(str(path)) as store:
        assert store.conn.execute("PRAGMA user_version").fetchall() == [(latest_version(),)]
        store.topic("events").configure(max_payload_bytes=4)
        with pytest.raises(apsw.ConstraintError, match=LIMIT_REFUSAL):
            store.conn.execute("INSERT INTO sq_publish (topic, value) VALUES ('events', '12345')")
        store.conn.execute("INSERT INTO sq_publish (topic, value) VALUES ('events', '1234')")
        assert store.topic("events").bounds() == (0, 8)
        assert store.check().ok


def test_the_publish_views_limit_holds_for_a_standard_sqlite3_client(store_path):
    with Store(store_path) as store:
        store.publish(TOPIC_LIMITED, "first")
        store.topic(TOPIC_LIMITED).configure(max_payload_bytes=10)
    proc = foreign(store_path, "limit")
    result = json.loads(proc.communicate(timeout=60)[0])
    assert [error.startswith(LIMIT_REFUSAL) for error in result["refused"]] == [True] * 3
    assert result["error_types"] == ["IntegrityError"] * 3
    assert result["in_transaction"] == [True] * 3  # the caller's transaction survived each
    with Store(store_path) as store:
        assert [(e.offset, e.value) for e in store.read(TOPIC_LIMITED)] == [
            (0, "first"), (1, "é" * 5), (2, b"\x00" * 10), (3, "after")]
        assert store.check().ok
