"""Batch reads, the Kafka-shaped and typed schemas, option errors at load(), registration."""

from __future__ import annotations

import json

import pytest

import spark_queue
from spark_queue.store import Record, Store


def read(spark, path, schema=None, **options):
    reader = spark.read.format("sqliteq").option("path", path)
    if schema is not None:
        reader = reader.schema(schema)
    for name, value in options.items():
        reader = reader.option(name, str(value))
    return reader.load()


KAFKA_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def test_default_schema_is_kafkas(spark, store, store_path):
    store.publish("t", {"a": 1}, key="k1", headers={"h": "v"}, timestamp_ms=1_700_000_000_123)
    df = read(spark, store_path, topic="t", includeHeaders="true")
    assert df.columns == KAFKA_COLUMNS + ["headers"]
    assert [f.dataType.simpleString() for f in df.schema.fields] == [
        "binary", "binary", "string", "int", "bigint", "timestamp", "int",
        "array<struct<key:string,value:binary>>",
    ]
    row = df.collect()[0]
    assert (row.key, row.value, row.topic, row.partition, row.offset, row.timestampType) == (
        b"k1", b'{"a":1}', "t", 0, 0, 0,
    )
    assert row.headers[0].key == "h" and row.headers[0].value == b"v"
    millis = spark.createDataFrame([row]).selectExpr("unix_millis(timestamp) AS m").first().m
    assert millis == 1_700_000_000_123


def test_string_format_key_and_value(spark, store, store_path):
    store.publish_many("t", [Record("hello", key="k"), Record(b"\x00raw")])
    rows = read(spark, store_path, topic="t", keyFormat="string").orderBy("offset").collect()
    assert rows[0].key == "k" and rows[0].value == b"hello"
    rows = read(spark, store_path, topic="t", valueFormat="string").where("offset = 0").collect()
    assert rows[0].value == "hello" and rows[0].key == b"k"


def test_batch_read_over_an_offset_range_and_several_topics(spark, store, store_path):
    store.publish_many("a", range(100))
    store.publish_many("b", range(50))
    df = read(spark, store_path, topics="a,b", startingOffsets='{"a": 10}',
              endingOffsets='{"a": 20, "b": -1}', rowsPerPartition=7, minPartitions=3)
    rows = sorted((r.topic, r.offset) for r in df.select("topic", "offset").collect())
    assert rows == [("a", i) for i in range(10, 20)] + [("b", i) for i in range(50)]
    assert df.rdd.getNumPartitions() >= 3


def test_batch_read_with_the_driver_shipped_path(spark, store, store_path):
    store.publish_many("a", ({"n": i} for i in range(1_000)))
    df = read(spark, store_path, topic="a", readPath="driver", rowsPerPartition=300)
    assert sorted(r.offset for r in df.select("offset").collect()) == list(range(1_000))


def test_empty_topic_and_empty_range_read_as_no_rows(spark, store, store_path):
    store.topic("empty").create()
    assert read(spark, store_path, topic="empty").count() == 0
    assert read(spark, store_path, topicPattern="nothing.*").count() == 0


def test_typed_read_decodes_every_well_formed_row(spark, store, store_path):
    records = [{"id": i, "user": f"u{i}", "score": i / 4, "tags": ["x"] * (i % 3)}
               for i in range(2_000)]
    store.publish_many("orders", records)
    df = read(spark, store_path, "id LONG, user STRING, score DOUBLE, tags ARRAY<STRING>",
              topic="orders")
    got = sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])
    assert got == records


def test_typed_read_failfast_names_topic_and_offset(spark, store, store_path):
    store.publish_many("orders", [{"id": 1}, "{broken", {"id": 3}])
    df = read(spark, store_path, "id LONG", topic="orders")
    with pytest.raises(Exception, match=r"topic 'orders' offset 1 .*PERMISSIVE"):
        df.collect()


def test_typed_read_permissive_gives_nulls_and_the_raw_text(spark, store, store_path):
    store.publish_many("orders", [{"id": 1}, "{broken", {"id": "three"}, {"id": 4}])
    df = read(spark, store_path, "id LONG, _corrupt_record STRING", topic="orders",
              mode="PERMISSIVE")
    rows = [tuple(r) for r in df.collect()]
    assert rows == [(1, None), (None, "{broken"), (None, '{"id":"three"}'), (4, None)]
    df = read(spark, store_path, "id LONG, bad STRING", topic="orders", mode="permissive",
              columnNameOfCorruptRecord="bad")
    assert [r.bad for r in df.collect()][1] == "{broken"


def test_data_loss_in_a_batch_read(spark, store, store_path):
    store.publish_many("t", range(100))
    store.topic("t").prune(retention_rows=30)
    df = read(spark, store_path, topic="t", startingOffsets='{"t": 5}')
    with pytest.raises(Exception, match="requested offset 5.*earliest available offset 70"):
        df.collect()
    df = read(spark, store_path, topic="t", startingOffsets='{"t": 5}', failOnDataLoss="false")
    assert df.count() == 30


def test_committed_batch_read_starts_at_the_consumer_offsets(spark, store, store_path):
    store.publish_many("t", range(10))
    store.commit_offsets("svc", {"t": 6})
    df = read(spark, store_path, topic="t", consumer="svc", startingOffsets="committed")
    assert sorted(r.offset for r in df.select("offset").collect()) == [6, 7, 8, 9]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"topic": "t", "startingOffsets": "newest"},
         "'startingOffsets' must be earliest, latest, committed or a JSON object"),
        ({"topic": "t", "maxRowsPerTrigger": "abc"}, "'maxRowsPerTrigger' must be a positive"),
        ({}, "exactly one of the options 'topic', 'topics' or 'topicPattern'"),
        ({"topic": "t", "topicPattern": "t.*"}, "exactly one of the options"),
        ({"topic": "t", "startingOffsets": '{"u": 1}'}, "names topic 'u'"),
    ],
)
def test_bad_options_fail_at_load(spark, store_path, options, message):
    Store(store_path).close()
    reader = spark.read.format("sqliteq").option("path", store_path)
    for name, value in options.items():
        reader = reader.option(name, value)
    with pytest.raises(Exception, match=message):
        reader.load()


def test_missing_path_and_missing_file_fail_at_load(spark, tmp_path):
    with pytest.raises(Exception, match="'path' is required"):
        spark.read.format("sqliteq").option("topic", "t").load()
    missing = str(tmp_path / "nope.sqlite")
    with pytest.raises(Exception, match="does not exist"):
        spark.read.format("sqliteq").option("topic", "t").load(missing)
    assert not (tmp_path / "nope.sqlite").exists()


def test_bad_option_with_a_user_schema_fails_before_any_task(spark, store_path):
    Store(store_path).close()
    df = read(spark, store_path, "id LONG", topic="t", maxRowsPerTrigger="5")
    with pytest.raises(Exception, match="'maxRowsPerTrigger'.*streaming reads only"):
        df.collect()


def test_load_path_argument_and_explicit_register(spark, store, store_path):
    store.publish_many("t", range(3))
    spark_queue.register(spark)
    df = spark.read.format("sqliteq").option("topic", "t").load(store_path)
    assert df.count() == 3
    offsets = json.loads(json.dumps(sorted(r.offset for r in df.collect())))
    assert offsets == [0, 1, 2]


def test_a_null_value_is_null_in_spark_both_ways(spark, store, store_path):
    store.publish_many("t", [Record(None, key="gone"), {"a": 1}])
    rows = read(spark, store_path, topic="t", valueFormat="string").orderBy("offset").collect()
    assert [(r.key, r.value) for r in rows] == [(b"gone", None), (None, '{"a":1}')]
    df = spark.createDataFrame([("gone", None)], "key STRING, value STRING")
    df.write.format("sqliteq").mode("append").option("topic", "u").save(store_path)
    event = store.read("u")[0]
    assert (event.key, event.value) == ("gone", None)


def test_a_batch_read_of_a_missing_named_topic_fails_naming_the_close_topics(
    spark, store, store_path
):
    # Was 0 rows, silently (issue 34); Kafka's source fails too. Spark asks for the schema
    # alike for read and readStream, so it fails when the read is planned.
    store.publish("clicks", 1)
    df = read(spark, store_path, topic="clickz")
    with pytest.raises(Exception, match=r"topic 'clickz' \(did you mean 'clicks'\?\) does not "
                       r"exist") as caught:
        df.count()
    assert "UnknownTopicError" in str(caught.value)
