"""A topic's schema is held by every Python writer (the one insert function checks), is
versioned in the file with the version each event was checked against, and changes only as
its compatibility rule allows."""

from __future__ import annotations

import json

import pytest

from spark_queue.errors import (
    ArgumentError,
    SchemaCompatibilityError,
    SchemaDdlError,
    SchemaMismatchError,
)
from spark_queue.store import EncodedChunk, Producer, Record, Store, TopicRows
from spark_queue.store.file.codec import BYTES, JSON, TEXT

DDL = "device STRING NOT NULL, temp DOUBLE, site STRUCT<id: INT, zone: STRING>, tags ARRAY<STRING>"
GOOD = {"device": "d1", "temp": 21.5, "site": {"id": 1, "zone": "n"}, "tags": ["a"]}
WRONG_TYPE = ({"device": "d1", "temp": "21.5"}, "field temp must be DOUBLE (a JSON number); "
              'got text "21.5"')
MISSING = ({"tmp": 21.5}, "field device must be STRING (a JSON string); got nothing")
UNPARSABLE = ("{not json", "the value is not JSON text")
BAD = [WRONG_TYPE, MISSING, UNPARSABLE]


# docs/schemas.md's query: the version each event was checked against (NULL: none).
EVENT_VERSIONS = """
SELECT e.offset,
       (SELECT max(s.version) FROM sq_topic_schemas s
        WHERE s.topic_id = e.topic_id AND s.from_offset <= e.offset) AS schema_version
FROM sq_events e JOIN sq_topics t ON t.id = e.topic_id
WHERE t.name = ? ORDER BY e.offset
"""


def stored_rows(store, topic="t"):
    return store.conn.execute(
        "SELECT e.offset, e.key, e.value, typeof(e.value), e.value_type, e.headers "
        "FROM sq_events e JOIN sq_topics t ON t.id = e.topic_id WHERE t.name = ? "
        "ORDER BY e.offset", (topic,)).fetchall()


@pytest.fixture
def schema_store(store):
    store.publish("t", "before the schema")
    store.topic("t").set_schema(DDL)
    return store


def check_refusal(caught, message, item=0):
    text = str(caught.value)
    assert f"topic 't' (schema version 1): item {item} of the batch: " in text
    assert message in text
    assert "Nothing of the batch was published" in text


@pytest.mark.parametrize(("value", "message"), BAD)
def test_publish_refuses_and_writes_nothing(schema_store, value, message):
    with pytest.raises(SchemaMismatchError) as caught:
        schema_store.publish("t", value)
    check_refusal(caught, message)
    assert schema_store.topic("t").bounds() == (0, 1)


@pytest.mark.parametrize(("value", "message"), BAD)
def test_publish_many_refuses_the_whole_batch(schema_store, value, message):
    with pytest.raises(SchemaMismatchError) as caught:
        schema_store.publish_many("t", [GOOD, GOOD, value, GOOD])
    check_refusal(caught, message, item=2)
    with pytest.raises(SchemaMismatchError):
        schema_store.publish_many("t", [Record(GOOD, key="k"), Record(value, key="k")])
    assert schema_store.topic("t").bounds() == (0, 1)


@pytest.mark.parametrize(("value", "message"), BAD)
def test_a_transaction_refuses_and_rolls_back(schema_store, value, message):
    with pytest.raises(SchemaMismatchError) as caught, schema_store.transaction() as tx:
        tx.publish("t", GOOD)
        tx.publish("t", value)
    assert message in str(caught.value)
    with pytest.raises(SchemaMismatchError), schema_store.transaction() as tx:
        tx.publish_many("t", [GOOD, value])
    assert schema_store.topic("t").bounds() == (0, 1)


@pytest.mark.parametrize(("value", "message"), BAD)
def test_the_producer_answers_the_refusal_and_writes_nothing(schema_store, store_path, value,
                                                             message):
    with Producer(store_path) as producer:
        future = producer.publish_nowait("t", value)
        producer.flush()
        with pytest.raises(SchemaMismatchError, match="field|not JSON") as caught:
            future.result(timeout=60)
        assert message in str(caught.value)
    assert schema_store.topic("t").bounds() == (0, 1)


@pytest.mark.parametrize(("value", "message"), BAD)
def test_a_sink_batch_is_refused_whole_with_its_ledger_entry(schema_store, value, message):
    text = value if isinstance(value, str) else json.dumps(value)
    chunk = EncodedChunk([json.dumps(GOOD), text], TEXT)
    with pytest.raises(SchemaMismatchError) as caught:
        schema_store.commit_sink_batch("q1", 0, TopicRows("t", [chunk]))
    check_refusal(caught, message, item=1)
    routed = EncodedChunk([json.dumps(GOOD), text], TEXT, topics=["t", "t"])
    with pytest.raises(SchemaMismatchError):
        schema_store.commit_sink_batch("q1", 0, TopicRows(None, [routed]))
    assert schema_store.topic("t").bounds() == (0, 1)
    assert schema_store.conn.execute("SELECT count(*) FROM sq_sink_commits").fetchall() == [(0,)]


def test_a_valid_event_is_stored_byte_for_byte_as_without_a_schema(tmp_path):
    values = [GOOD, json.dumps(GOOD), json.dumps(GOOD).encode(), '{"device": "spaced"  }', None]
    stores = []
    for name, schema in (("plain", None), ("checked", DDL)):
        with Store(str(tmp_path / f"{name}.db")) as store:
            if schema is not None:
                store.topic("t").set_schema(schema)
            for value in values:
                store.publish("t", value, key="k", headers={"h": "1"})
            store.publish_many("t", values)
            store.commit_sink_batch(None, None, TopicRows("t", [
                EncodedChunk([json.dumps(GOOD)], JSON),
                EncodedChunk([json.dumps(GOOD).encode()], BYTES)]))
            stores.append(stored_rows(store))
    assert stores[0] == stores[1] and len(stores[0]) == 12


def test_each_event_records_the_version_it_was_checked_against(schema_store):
    schema_store.publish("t", GOOD)
    topic = schema_store.topic("t")
    second = topic.set_schema(DDL + ", battery INT")
    assert (second.version, second.from_offset) == (2, 2)
    schema_store.publish_many("t", [GOOD, {**GOOD, "battery": 3}])
    assert schema_store.conn.execute(EVENT_VERSIONS, ("t",)).fetchall() == [
        (0, None), (1, 1), (2, 2), (3, 2)]
    assert [s.version for s in topic.schema_history()] == [1, 2]
    with pytest.raises(SchemaMismatchError, match="schema version 2.*field battery"):
        schema_store.publish("t", {**GOOD, "battery": "full"})


def test_the_same_schema_again_stores_no_version(schema_store):
    topic = schema_store.topic("t")
    assert topic.set_schema(DDL.replace("STRING", "string")).version == 1
    assert len(topic.schema_history()) == 1


def test_a_schema_creates_its_topic(store):
    schema = store.topic("new").set_schema("a INT")
    assert (schema.topic, schema.version, schema.from_offset) == ("new", 1, 0)
    assert store.topic("new").exists()


@pytest.mark.parametrize(("ddl", "rule"), [
    ("device STRING NOT NULL, temp INT, site STRUCT<id: INT, zone: STRING>, tags ARRAY<STRING>",
     "field temp changes type from DOUBLE to INT (rule: backward keeps each field's type)"),
    ("device STRING NOT NULL, site STRUCT<id: INT, zone: STRING>, tags ARRAY<STRING>",
     "field temp is removed (rule: backward keeps every field)"),
    ("device STRING NOT NULL, temp DOUBLE, site STRUCT<id: INT>, tags ARRAY<STRING>",
     "field site.zone is removed"),
    ("device STRING NOT NULL, temp DOUBLE, site STRUCT<id: INT, zone: STRING>, tags ARRAY<INT>",
     "field tags[] changes type from STRING to INT"),
    (DDL + ", battery INT NOT NULL", "field battery is new and NOT NULL"),
    (DDL.replace("temp DOUBLE", "temp DOUBLE NOT NULL"), "field temp becomes NOT NULL"),
])
def test_backward_refuses_a_breaking_change_naming_field_and_rule(schema_store, ddl, rule):
    with pytest.raises(SchemaCompatibilityError, match="not backward compatible with version 1"
                       ) as caught:
        schema_store.topic("t").set_schema(ddl)
    assert rule in str(caught.value)
    assert len(schema_store.topic("t").schema_history()) == 1


def test_backward_accepts_a_new_nullable_field_and_none_accepts_anything(schema_store):
    topic = schema_store.topic("t")
    assert topic.set_schema(DDL + ", battery INT").version == 2
    changed = topic.set_schema("other BOOLEAN NOT NULL", compatibility="none")
    assert (changed.version, changed.compatibility) == (3, "none")
    schema_store.publish("t", {"other": True})
    with pytest.raises(SchemaMismatchError, match="field other"):
        schema_store.publish("t", GOOD)


def test_bad_settings_and_ddl_are_refused_before_anything_is_stored(store):
    with pytest.raises(ArgumentError, match="on_invalid must be one of reject"):
        store.topic("t").set_schema("a INT", on_invalid="ignore")
    with pytest.raises(ArgumentError, match="compatibility must be one of backward, none"):
        store.topic("t").set_schema("a INT", compatibility="forward")
    with pytest.raises(SchemaDdlError, match="position"):
        store.topic("t").set_schema("a INTT")
    assert store.topic("t").schema() is None


def test_a_tombstone_passes_the_schema(schema_store):
    assert schema_store.publish("t", None) == 1


def test_a_producer_call_that_does_not_fit_is_refused_alone_in_its_group_commit(
        schema_store, store_path):
    with Producer(store_path, linger_ms=600_000) as producer:
        futures = [producer.publish_nowait("t", value)
                   for value in (GOOD, WRONG_TYPE[0], GOOD, MISSING[0])]
        producer.flush()
        assert futures[0].result(timeout=60) == 1 and futures[2].result(timeout=60) == 2
        for future, (_, message) in zip(futures[1::2], (WRONG_TYPE, MISSING), strict=True):
            with pytest.raises(SchemaMismatchError) as caught:
                future.result(timeout=60)
            assert message in str(caught.value)
    assert schema_store.topic("t").bounds() == (0, 3)
