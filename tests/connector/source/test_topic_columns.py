"""valueSchema=topic: the read's columns are the ones the topic declared; Kafka's stay the
default; a stream fails naming both versions once the schema changes under it."""

from __future__ import annotations

import pytest
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

from spark_queue.connector.datasource import SqliteQueueDataSource
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema
from spark_queue.errors import OptionError, SchemaChangedError

DDL = "device STRING NOT NULL, temp DOUBLE"
COLUMNS = StructType([StructField("device", StringType(), False),
                      StructField("temp", DoubleType())])


@pytest.fixture
def declared(store):
    store.topic("t").set_schema(DDL)
    store.publish_many("t", [{"device": "a", "temp": 1.5}, {"device": "b"}])
    return store


def source(store_path, **options):
    return SqliteQueueDataSource({"path": store_path, "topic": "t", **options})


def test_the_schema_is_the_topics_ddl_and_kafkas_stays_the_default(declared, store_path):
    assert source(store_path, valueSchema="topic").schema() == DDL
    plain = source(store_path)
    assert plain.schema() == default_schema(parse_source_options(plain.options, streaming=None))


@pytest.mark.parametrize("mode", ["auto", "throughput", "low"])
def test_a_stream_fails_naming_both_versions_when_the_schema_changes(declared, store_path,
                                                                      mode):
    reader = source(store_path, valueSchema="topic", latencyMode=mode).streamReader(COLUMNS)
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    reader.partitions(start, end)
    declared.topic("t").set_schema(DDL + ", site STRING")
    declared.publish("t", {"device": "c", "site": "roof"})
    with pytest.raises(SchemaChangedError, match=(
            r"topic 't'.s schema changed from version 1 to version 2 \(device STRING NOT NULL, "
            r"temp DOUBLE, site STRING\).*Restart the query")):
        reader.latestOffset(end, reader.getDefaultReadLimit())
    reader.stop()


def test_a_topic_without_a_schema_or_topics_that_differ_are_refused(store, store_path):
    store.publish("t", "x")
    with pytest.raises(OptionError, match="topic 't' declares no schema"):
        source(store_path, valueSchema="topic").schema()
    store.topic("t").set_schema("a INT")
    store.topic("u").set_schema("b INT")
    with pytest.raises(OptionError, match="they declare different ones"):
        SqliteQueueDataSource({"path": store_path, "topics": "t,u",
                               "valueSchema": "topic"}).schema()
    assert SqliteQueueDataSource({"path": store_path, "topicPattern": "t",
                                  "valueSchema": "topic"}).schema() == "a INT"
    with pytest.raises(OptionError, match="'valueSchema' must be kafka or topic; got 'avro'"):
        source(store_path, valueSchema="avro").schema()
