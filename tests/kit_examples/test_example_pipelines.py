"""The test kit as a user writes with it: ten pipelines, each checked with StreamTest.

Nothing here reaches into the project's own test helpers: the fixtures come from the
plugin the wheel installs (``sqliteq_spark``, ``sqliteq_store``), and every test runs on
Spark Classic and on Spark Connect (``sqliteq_both``). The smoke matrix runs this file
from the built wheel on every supported pyspark.
"""

from __future__ import annotations

import datetime

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

from spark_queue.testing import StreamTest

pytestmark = pytest.mark.sqliteq_both

ORDER = "id INT, sku STRING, amount DOUBLE"


def orders(df):
    """The production reader's first step: Kafka's value, parsed as JSON with a schema."""
    return df.select(F.from_json(F.col("value").cast("string"), ORDER).alias("o")).select("o.*")


def shout(df):
    words = df.select(F.upper(F.col("value").cast("string")).alias("value"))
    return words.where(F.length("value") > 2)


def test_projection_and_filter(sqliteq_spark):
    with StreamTest(sqliteq_spark, shout) as test:
        test.add(["hi", "hello", "hey"]).check_answer(["HELLO", "HEY"])
        test.add(["no", "yes"]).check_answer(["HELLO", "HEY", "YES"])


def clicks_per_minute(df):
    clicks = df.select(F.from_json(F.col("value").cast("string"), "page STRING, at TIMESTAMP")
                       .alias("c")).select("c.*")
    counted = (clicks.withWatermark("at", "1 minute")
               .groupBy(F.window("at", "1 minute")).count())
    return counted.select(F.col("window.start").alias("minute"), "count")


def test_windowed_count_with_a_watermark_emits_closed_windows(sqliteq_spark):
    with StreamTest(sqliteq_spark, clicks_per_minute) as test:
        test.add([{"page": "/", "at": "2024-01-01 00:00:10"},
                  {"page": "/a", "at": "2024-01-01 00:00:50"},
                  {"page": "/", "at": "2024-01-01 00:01:30"}])
        test.check_answer([])  # no window is closed before the watermark passes it
        test.add({"page": "/", "at": "2024-01-01 00:05:00"})
        test.check_answer([(datetime.datetime(2024, 1, 1, 0, 0), 2),
                           (datetime.datetime(2024, 1, 1, 0, 1), 1)])


def test_drop_duplicates_keeps_the_first_of_each_id(sqliteq_spark):
    with StreamTest(sqliteq_spark, lambda df: orders(df).dropDuplicates(["id"])) as test:
        test.add([{"id": 1, "sku": "a", "amount": 1.0}, {"id": 2, "sku": "b", "amount": 2.0},
                  {"id": 1, "sku": "a", "amount": 1.0}])
        test.add([{"id": 2, "sku": "b", "amount": 2.0}, {"id": 3, "sku": "c", "amount": 3.0}])
        test.check_answer([(1, "a", 1.0), (2, "b", 2.0), (3, "c", 3.0)])


def test_stream_static_join_names_each_sku(sqliteq_spark):
    products = sqliteq_spark.createDataFrame([("a", "apple"), ("b", "bread")],
                                             "sku STRING, name STRING")

    def named(df):
        return orders(df).join(products, "sku").select("id", "name")

    with StreamTest(sqliteq_spark, named) as test:
        test.add([{"id": 1, "sku": "a", "amount": 1.0}, {"id": 2, "sku": "x", "amount": 2.0},
                  {"id": 3, "sku": "b", "amount": 3.0}])
        test.check_answer([{"id": 1, "name": "apple"}, {"id": 3, "name": "bread"}])


def test_a_restart_resumes_from_the_checkpoint(sqliteq_spark):
    with StreamTest(sqliteq_spark, shout) as test:
        test.add(["one", "two"]).process_all()
        test.restart()
        test.add("six").check_answer(["ONE", "TWO", "SIX"])
        test.stop().add("ten").restart().check_answer(["ONE", "TWO", "SIX", "TEN"])


def test_a_batch_replayed_after_a_crash_is_written_once(sqliteq_spark):
    with StreamTest(sqliteq_spark, orders) as test:
        test.add([{"id": 1, "sku": "a", "amount": 1.0}]).process_all()
        test.add([{"id": 2, "sku": "b", "amount": 2.0}]).crash_between_commits()
        test.check_answer([(1, "a", 1.0), (2, "b", 2.0)])
        test.add([{"id": 3, "sku": "c", "amount": 3.0}])
        test.check_answer([(1, "a", 1.0), (2, "b", 2.0), (3, "c", 3.0)])


def test_a_json_value_parsed_with_a_schema(sqliteq_spark):
    def big(df):
        return orders(df).where("amount >= 10").select("id", (F.col("amount") * 2).alias("x2"))

    with StreamTest(sqliteq_spark, big) as test:
        test.add([("k1", '{"id": 1, "sku": "a", "amount": 5}'),
                  ("k2", '{"id": 2, "sku": "b", "amount": 12.5}')])
        test.check_answer([{"id": 2, "x2": 25.0}])


def test_max_rows_per_trigger_bounds_each_batch(sqliteq_spark):
    options = {"maxRowsPerTrigger": 2}
    with StreamTest(sqliteq_spark, shout, options=options) as test:
        test.add(["aaa", "bbb", "ccc", "ddd", "eee"])
        test.check_last_batch(["EEE"])  # batches of 2, 2 and 1
        test.add(["fff", "ggg", "hhh"]).check_last_batch(["HHH"])
        assert len(test.rows()) == 8


def test_a_malformed_value_fails_the_query_under_failfast(sqliteq_spark):
    def strict(df):
        parsed = F.from_json(F.col("value").cast("string"), ORDER, {"mode": "FAILFAST"})
        return df.select(parsed.alias("o")).select("o.*")

    with StreamTest(sqliteq_spark, strict) as test:
        test.add([{"id": 1, "sku": "a", "amount": 1.0}]).check_answer([(1, "a", 1.0)])
        test.add("{not json")
        test.expect_failure(StreamingQueryException, match="(?i)malformed")


def test_a_queue_sink_enqueues_one_job_per_row(sqliteq_spark):
    def emails(df):
        return orders(df).select(F.concat(F.lit("order-"), F.col("id").cast("string"))
                                 .alias("subject"), F.col("amount"))

    with StreamTest(sqliteq_spark, emails, sink="queue:emails") as test:
        test.add([{"id": 7, "sku": "a", "amount": 3.0}, {"id": 8, "sku": "b", "amount": 4.0}])
        test.process_all()
        jobs = test.store.queue("emails").peek(10)
        assert sorted(job.payload["subject"] for job in jobs) == ["order-7", "order-8"]
        test.check_answer([("order-7", 3.0), ("order-8", 4.0)])
