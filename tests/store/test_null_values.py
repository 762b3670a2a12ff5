"""A null value is null: SQL NULL in the file, None in Python, the same for every write path.

Kafka users expect ``None`` to be a real null (a tombstone), as a null ``value``
column written through Spark's sink already was; before this rule,
``publish(None)`` stored the four characters of the JSON text ``null``.
"""

from __future__ import annotations

import json

from spark_queue.store import JSON, NewJob, Producer, Record, Store
from tests.cli.cli_run import run


def stored_events(store: Store) -> list[tuple]:
    with store.write() as conn:
        return conn.execute(
            "SELECT offset, value, typeof(value), value_type FROM sq_events ORDER BY offset"
        ).fetchall()


def test_publish_none_stores_sql_null_and_reads_back_none(store: Store) -> None:
    store.publish("t", None, key="gone")
    assert stored_events(store) == [(0, None, "null", 0)]
    event = store.read("t")[0]
    assert (event.key, event.value, event.value_type) == ("gone", None, "bytes")
    table = store.read_arrow("t")
    assert table.column("value").to_pylist() == [None]


def test_publish_many_keeps_nulls_among_other_values_and_alone(store: Store) -> None:
    store.publish_many("t", [None, {"a": 1}, None, "text", b"raw", Record(None, key="k")])
    store.publish_many("t", [None] * 3)
    assert stored_events(store) == [
        (0, None, "null", 0), (1, '{"a":1}', "text", JSON), (2, None, "null", 0),
        (3, "text", "text", 1), (4, b"raw", "blob", 0), (5, None, "null", 0),
        (6, None, "null", 0), (7, None, "null", 0), (8, None, "null", 0),
    ]
    assert [e.value for e in store.read("t")] == [None, {"a": 1}, None, "text", b"raw"] + [None] * 4
    # JSON null inside a value is still JSON: only a whole null value is the null value.
    store.publish("t", [None])
    assert store.read("t", start=9)[0].value == [None]


def test_the_producer_stores_none_as_null(store_path: str) -> None:
    with Producer(store_path) as producer:
        producer.publish("t", None)
        producer.publish_nowait("t", None).result()
    with Store(store_path) as store:
        assert [row[1:] for row in stored_events(store)] == [(None, "null", 0)] * 2


def test_a_job_payload_of_none_is_null_and_claims_as_none(store: Store) -> None:
    queue = store.queue("q")
    queue.enqueue(None)
    queue.enqueue_many([None, NewJob(None, priority=1)])
    with store.write() as conn:
        rows = conn.execute("SELECT value, typeof(value), value_type FROM sq_jobs").fetchall()
    assert rows == [(None, "null", 0)] * 3
    assert [job.payload for job in queue.claim(3)] == [None] * 3


def test_the_cli_stores_the_json_literal_null_as_null_and_text_null_as_text(
    capsys, store_path: str
) -> None:
    assert run(capsys, "publish", store_path, "t", "null", "--create")[0] == 0
    assert run(capsys, "publish", store_path, "t", "null", "--value-format", "text")[0] == 0
    with Store(store_path) as store:
        assert [row[1:] for row in stored_events(store)] == [
            (None, "null", 0), ("null", "text", 1),
        ]
    code, out, _ = run(capsys, "tail", store_path, "t", "--json")
    assert code == 0
    assert [json.loads(line)["value"] for line in out.splitlines()] == [None, "null"]
