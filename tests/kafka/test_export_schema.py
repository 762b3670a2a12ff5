"""A topic's schema travels with its Kafka copy (issue 61): each event names the version it
was checked against, and the first event of each version holds it as JSON Schema, so a
Kafka side can register it. The Kafka side is :mod:`tests.kafka.fake_link` (no broker)."""

from __future__ import annotations

import json

import pytest

from spark_queue.errors import PayloadError
from spark_queue.kafka.export import export_topics
from spark_queue.kafka.records import JSON_SCHEMA_HEADER, SCHEMA_HEADER
from spark_queue.store import Record

BOOTSTRAP = "fake-kafka:9092"


def schema_headers(log) -> list[dict[str, str]]:
    return [{name: value for name, value in content.headers
             if name in (SCHEMA_HEADER, JSON_SCHEMA_HEADER)} for content in log]


def test_each_record_names_its_events_schema_version_and_each_versions_first_holds_it(
        fake_kafka, store, store_path):
    sensors = store.topic("sensors")
    store.publish_many("sensors", [{"device": "a"}, {"device": "b"}])  # before any schema
    sensors.set_schema("device STRING NOT NULL")
    store.publish_many("sensors", [{"device": "c"}, {"device": "d"}])
    sensors.set_schema("device STRING NOT NULL, temp DOUBLE")
    store.publish_many("sensors", [{"device": "e", "temp": 1.5}, {"device": "f"}])

    [result] = export_topics(store_path, BOOTSTRAP, ["sensors"])

    v1, v2 = (json.dumps(v.json_schema(), separators=(",", ":"))
              for v in sensors.schema_history())
    assert result.kafka_end == 6
    assert schema_headers(fake_kafka.logs["sensors"]) == [
        {}, {},
        {SCHEMA_HEADER: "1", JSON_SCHEMA_HEADER: v1}, {SCHEMA_HEADER: "1"},
        {SCHEMA_HEADER: "2", JSON_SCHEMA_HEADER: v2}, {SCHEMA_HEADER: "2"},
    ]
    assert json.loads(v2)["properties"]["temp"]  # the document a registry takes
    # The event's own bytes and headers are untouched: only the reserved names are added.
    assert [c.value for c in fake_kafka.logs["sensors"]] == [
        json.dumps(e.value, separators=(",", ":")).encode() for e in store.read("sensors")]


def test_a_rerun_after_a_new_version_checks_the_copy_and_continues_it(
        fake_kafka, store, store_path):
    sensors = store.topic("sensors")
    sensors.set_schema("device STRING NOT NULL")
    store.publish_many("sensors", [{"device": "a"}, {"device": "b"}])
    export_topics(store_path, BOOTSTRAP, ["sensors"])
    sensors.set_schema("device STRING NOT NULL, temp DOUBLE")
    store.publish("sensors", {"device": "c", "temp": 2.0})

    # The overlap check compares Kafka's records with the store's, headers included.
    [result] = export_topics(store_path, BOOTSTRAP, ["sensors"])

    assert (result.written, result.kafka_end) == (1, 3)
    assert [dict(c.headers).get(SCHEMA_HEADER) for c in fake_kafka.logs["sensors"]] == [
        "1", "1", "2"]


@pytest.mark.parametrize("name", [SCHEMA_HEADER, JSON_SCHEMA_HEADER])
def test_an_event_header_with_a_schema_headers_name_is_refused(fake_kafka, store, store_path,
                                                              name):
    store.publish_many("t", [Record("a", headers={name: "1"})])
    with pytest.raises(PayloadError, match=rf"store topic 't' offset 0 has a header named "
                                           rf"'{name}'"):
        export_topics(store_path, BOOTSTRAP, ["t"])
