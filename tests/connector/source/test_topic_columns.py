"""valueSchema=topic: the read's columns are the ones the topic declared; Kafka's stay the
default; a stream's batches end where the schema changes, and the next fails naming both
versions and whether the change is backward compatible."""

from __future__ import annotations

import pytest
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

from spark_queue.connector.datasource import SqliteQueueDataSource
from spark_queue.connector.offset_json import SourceOffset
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema
from spark_queue.errors import OptionError, SchemaChange, SchemaChangedError

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


def plan(reader, start):
    """The end of the batch after ``start`` as ``{topic: offset}``, and Spark's form of it;
    the batch planned as Spark would."""
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    reader.partitions(start, end)
    return SourceOffset.from_spark(end).positions, end


def stream_reader(store_path, mode, **options):
    return source(store_path, valueSchema="topic", latencyMode=mode,
                  **options).streamReader(COLUMNS)


@pytest.mark.parametrize("mode", ["auto", "throughput", "low"])
def test_a_batch_ends_where_the_schema_changes_and_the_next_fails_naming_both_versions(
        declared, store_path, mode):
    reader = stream_reader(store_path, mode)
    start = reader.initialOffset()
    declared.topic("t").set_schema(DDL + ", site STRING")  # from offset 2
    declared.publish("t", {"device": "c", "site": "roof"})
    positions, end = plan(reader, start)
    assert positions == {"t": 2}  # the two version-1 events, not the version-2 one
    with pytest.raises(SchemaChangedError, match=(
            r"^\[sqliteq-schema-changed topic=t from=1 to=2 compatibility=backward\] "
            r"sqliteq source: topic 't'.s schema changed from version 1 to version 2 \(device "
            r"STRING NOT NULL, temp DOUBLE, site STRING\) at offset 2 .*backward compatible.*"
            r"restart the query from the same checkpoint")) as raised:
        plan(reader, end)
    assert SchemaChangedError.change_in(f"wrapped: {raised.value}\n") == SchemaChange(
        "t", 1, 2, "backward")
    reader.stop()


def test_a_version_set_between_load_and_start_is_not_taken_for_the_columns_loaded(
        declared, store_path):
    loaded = source(store_path, valueSchema="topic")  # load(): version 1's columns
    declared.topic("t").set_schema(DDL + ", site STRING")
    declared.publish("t", {"device": "c", "site": "roof"})
    reader = loaded.streamReader(COLUMNS)  # start(): Spark hands back the columns loaded
    assert reader.options.value_schema_versions == (("t", 1),)
    positions, end = plan(reader, reader.initialOffset())
    assert positions == {"t": 2}
    with pytest.raises(SchemaChangedError, match=r"topic=t from=1 to=2 compatibility=backward"):
        plan(reader, end)
    reader.stop()


def test_the_boundary_holds_under_row_limits_and_a_version_of_the_same_columns(
        declared, store_path):
    reader = stream_reader(store_path, "throughput", maxRowsPerTrigger=1)
    start = reader.initialOffset()
    declared.topic("t").set_schema(DDL, on_invalid="quarantine")  # v2 at 2: the same columns
    declared.publish("t", {"device": "c"})
    declared.topic("t").set_schema(DDL + ", site STRING")  # v3 at 3
    declared.publish("t", {"device": "d", "site": "roof"})
    ends = []
    with pytest.raises(SchemaChangedError, match=r"topic=t from=1 to=3 compatibility=backward"):
        while True:
            positions, start = plan(reader, start)
            ends.append(positions["t"])
    assert ends == [1, 2, 3]  # one row a batch, through version 2, up to version 3's first
    reader.stop()


def test_a_change_set_without_a_compatibility_check_is_marked_so(declared, store_path):
    reader = stream_reader(store_path, "throughput")
    start = reader.initialOffset()
    _, start = plan(reader, start)
    declared.topic("t").set_schema("device STRING NOT NULL, temp STRING", compatibility="none")
    with pytest.raises(SchemaChangedError, match=(
            r"compatibility=none\].*not checked for compatibility.*read version 2's columns")):
        plan(reader, start)
    reader.stop()


def test_nothing_but_a_marker_reads_as_a_schema_change():
    assert SchemaChangedError.change_in("topic t's schema changed from version 1 to 2") is None
    change = SchemaChange("a.b-c_1", 3, 7, "none")
    assert SchemaChangedError.change_in(SchemaChangedError.marker(change)) == change
    assert not change.backward


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
