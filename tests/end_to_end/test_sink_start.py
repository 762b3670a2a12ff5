"""What the sqliteq sink refuses when a write or a stream starts: no path, a path that is not a
store, a save mode it cannot keep, a schema it cannot write. Nothing is written."""

from __future__ import annotations

import os

import pytest
from pyspark.errors import AnalysisException, StreamingQueryException

import spark_queue
from spark_queue.store import Store
from tests.end_to_end.sink_helpers import json_input, run_stream, stored_events


@pytest.fixture(autouse=True)
def _registered(spark):
    spark_queue.register(spark)


@pytest.fixture(autouse=True)
def _a_store(store_path):
    """The store the tests write into exists, as `sqliteq init` makes one; a path that is not
    a store has a test of its own."""
    Store(store_path).close()


def test_a_missing_path_fails_at_start_saying_how_to_give_it(spark):
    df = spark.createDataFrame([("1",)], "value STRING")
    with pytest.raises(Exception, match=r"sqliteq sink needs option 'path'"):
        df.write.format("sqliteq").mode("append").option("topic", "t").save()


def test_a_path_that_is_not_a_store_fails_at_start_naming_create_store_and_creates_nothing(
    spark, tmp_path, shared_dir
):
    """A typo'd path (the CLI refuses one without --create): df.write and writeStream fail
    before any row is written, naming the option; with createStore=true both create it."""
    typo = str(tmp_path / "typo" / "app.sqlite")
    os.mkdir(os.path.dirname(typo))
    refusal = r"'path' names .*typo.*not a store.*set option createStore=true"
    df = spark.createDataFrame([("1",)], "value STRING")
    with pytest.raises(Exception, match=refusal):
        df.write.format("sqliteq").mode("append").option("topic", "t").save(typo)
    src = json_input(shared_dir, [[{"value": "1"}]])
    stream = spark.readStream.schema("value STRING").json(src)
    with pytest.raises(StreamingQueryException, match=refusal):
        run_stream(stream, typo, str(tmp_path / "ck"), topic="t")
    assert os.listdir(os.path.dirname(typo)) == []
    df.write.format("sqliteq").mode("append").option("topic", "t").option(
        "createStore", "true").save(typo)
    os.remove(typo)
    run_stream(stream, typo, str(tmp_path / "ck2"), topic="t", createStore="true")
    assert [e.value for e in stored_events(typo, "t")] == ["1"]


# -- save modes ----------------------------------------------------------------
def test_overwrite_fails_at_start_naming_append(spark, store_path):
    df = spark.createDataFrame([("1",)], "value STRING")
    with pytest.raises(Exception, match=r"supports mode\('append'\) only; got overwrite"):
        df.write.format("sqliteq").mode("overwrite").option("topic", "t").save(store_path)
    with Store(store_path) as store:
        assert not store.topic("t").exists()


@pytest.mark.parametrize("mode", ["ignore", "errorifexists"])
def test_spark_rejects_ignore_and_errorifexists_naming_the_supported_modes(spark, store_path, mode):
    df = spark.createDataFrame([("1",)], "value STRING")
    with pytest.raises(AnalysisException, match="Append.*Overwrite"):
        df.write.format("sqliteq").mode(mode).option("topic", "t").save(store_path)


# -- schema problems fail at start -------------------------------------------
SCHEMA_PROBLEMS = [
    (
        "value INT",
        {"topic": "t"},
        r"column 'value' is the payload and must be string or binary; got int",
    ),
    (
        "key DOUBLE, value STRING",
        {"topic": "t"},
        r"column 'key' is the event key and must be string or binary; got double",
    ),
    (
        "headers MAP<STRING, INT>, value STRING",
        {"topic": "t"},
        r"column 'headers' holds the event headers and must be map<string,string>",
    ),
    (
        "topic INT, value STRING",
        {},
        r"column 'topic' routes rows to topics and must be string; got int",
    ),
    ("value STRING", {}, r"needs a destination: option 'topic' \(publish\), option 'queue'"),
    ("key STRING, headers MAP<STRING,STRING>", {"topic": "t"}, r"no column to write"),
    (
        "id INT, blob BINARY",
        {"topic": "t"},
        r"column 'blob' of type binary cannot be written into the row's JSON value",
    ),
    (
        "id INT, m MAP<INT, STRING>",
        {"topic": "t"},
        r"column 'm' is map<int,string>, which has no JSON form",
    ),
    ("id INT, s STRUCT<b: BINARY>", {"topic": "t"}, r"column 's.b' of type binary"),
    ("id INT, d INTERVAL DAY", {"topic": "t"}, r"column 'd' of type interval day"),
    (
        "value STRING, priority STRING",
        {"queue": "q"},
        r"queue column 'priority' sets the job's priority and must be "
        r"tinyint, smallint, int or bigint; got string",
    ),
    ("value STRING, delay_ms DOUBLE", {"queue": "q"}, r"queue column 'delay_ms'.*got double"),
    (
        "value STRING, idempotency_key INT",
        {"queue": "q"},
        r"queue column 'idempotency_key'.*must be string; got int",
    ),
    ("value STRING, ttl_ms STRING", {"queue": "q"}, r"queue column 'ttl_ms'"),
    ("value STRING, max_attempts DECIMAL(3,0)", {"queue": "q"}, r"queue column 'max_attempts'"),
]


@pytest.mark.parametrize(
    ("ddl", "options", "message"), SCHEMA_PROBLEMS, ids=[p[0] for p in SCHEMA_PROBLEMS]
)
def test_schema_problems_fail_at_start_naming_the_column(spark, store_path, ddl, options, message):
    df = spark.createDataFrame([], ddl)
    writer = df.write.format("sqliteq").mode("append")
    for key, value in options.items():
        writer = writer.option(key, value)
    with pytest.raises(Exception, match=message):
        writer.save(store_path)
