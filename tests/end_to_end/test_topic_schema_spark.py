"""A topic's schema from Spark: the sink is held to it (refused whole, or quarantined), and a
reader with valueSchema=topic gets the declared columns, parsed, where Kafka's stay the
default."""

from __future__ import annotations

import pytest

import spark_queue
from spark_queue.store import Store

DDL = "device STRING NOT NULL, temp DOUBLE"


@pytest.fixture(autouse=True)
def _registered(spark):
    spark_queue.register(spark)


def write(spark, store_path, rows):
    df = spark.createDataFrame([(r,) for r in rows], "value STRING")
    df.coalesce(1).write.format("sqliteq").mode("append").option("topic", "t").save(store_path)


def test_the_sink_refuses_a_batch_with_an_event_that_does_not_fit(spark, store_path):
    with Store(store_path) as store:
        store.topic("t").set_schema(DDL)
    with pytest.raises(Exception, match=r"topic 't' \(schema version 1\): item 1 of the batch: "
                       r"field temp must be DOUBLE \(a JSON number\); got text \"21.5\""):
        write(spark, store_path, ['{"device": "a", "temp": 1}', '{"device": "a", "temp": "21.5"}'])
    with Store(store_path) as store:
        assert store.topic("t").bounds() == (0, 0)


def test_the_sink_quarantines_and_a_reader_gets_the_declared_columns(spark, store_path):
    with Store(store_path) as store:
        store.topic("t").set_schema(DDL, on_invalid="quarantine")
    write(spark, store_path, ['{"device": "a", "temp": 1}', '{"tmp": 2}',
                              '{"device": "b", "temp": 2.5, "extra": true}'])
    with Store(store_path) as store:
        assert store.topic("t").bounds() == (0, 2)
        [held] = store.topic("t").quarantine()
        assert (held.value, held.writer, held.batch_row) == ('{"tmp": 2}', "python", 1)
    typed = (spark.read.format("sqliteq").option("topic", "t").option("valueSchema", "topic")
             .load(store_path))
    assert typed.schema.simpleString() == "struct<device:string,temp:double>"
    assert [tuple(r) for r in typed.orderBy("device").collect()] == [("a", 1.0), ("b", 2.5)]
    kafka = spark.read.format("sqliteq").option("topic", "t").load(store_path)
    assert kafka.columns[:2] == ["key", "value"]
