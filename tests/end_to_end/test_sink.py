"""The sqliteq sink from Spark: what lands in the file, exactly once (what it refuses at start:
test_sink_start.py)."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

import spark_queue
from spark_queue.store import Store
from tests.end_to_end.sink_helpers import json_input, ledger, run_stream, stored_events


@pytest.fixture(autouse=True)
def _registered(spark):
    spark_queue.register(spark)


@pytest.fixture(autouse=True)
def _a_store(store_path):
    """The tests write into a store made beforehand, as `sqliteq init` makes one; what a path
    that is not a store gets has tests of its own (test_a_path_that_is_not_a_store_...)."""
    Store(store_path).close()



# -- streaming -------------------------------------------------------------
def test_each_micro_batch_is_published_once_with_its_batch_id_in_theledger(
    spark, tmp_path, shared_dir, store_path
):
    src = json_input(
        shared_dir, [[{"k": "a", "v": "1"}, {"k": "b", "v": "2"}], [{"k": "c", "v": "3"}]]
    )
    df = (
        spark.readStream.schema("k STRING, v STRING")
        .option("maxFilesPerTrigger", 1)
        .json(src)
        .select(F.col("k").alias("key"), F.col("v").alias("value"))
    )
    query = run_stream(df, store_path, str(tmp_path / "ck"), topic="out")

    events = stored_events(store_path, "out")
    assert sorted((e.key, e.value) for e in events) == [("a", "1"), ("b", "2"), ("c", "3")]
    assert [e.offset for e in events] == [0, 1, 2]
    (entry,) = ledger(store_path)
    assert (entry.sink_id, entry.last_batch_id, entry.rows) == (str(query.id), 1, 3)


def test_restart_from_checkpoint_continues_and_never_rewrites(
    spark, tmp_path, shared_dir, store_path
):
    src = json_input(shared_dir, [[{"n": 1}], [{"n": 2}]])
    stream = spark.readStream.schema("n LONG").option("maxFilesPerTrigger", 1).json(src)
    checkpoint = str(tmp_path / "ck")
    run_stream(stream, store_path, checkpoint, topic="out")
    (shared_dir / "in" / "part-900.json").write_text('{"n": 3}\n')
    run_stream(stream, store_path, checkpoint, topic="out")
    assert sorted(e.value["n"] for e in stored_events(store_path, "out")) == [1, 2, 3]
    (entry,) = ledger(store_path)
    assert (entry.last_batch_id, entry.rows) == (2, 3)


def test_sink_id_option_names_the_ledger_entry(spark, tmp_path, shared_dir, store_path):
    src = json_input(shared_dir, [[{"n": 1}]])
    stream = spark.readStream.schema("n LONG").json(src)
    run_stream(stream, store_path, str(tmp_path / "ck"), topic="out", sinkId="nightly")
    assert [(e.sink_id, e.last_batch_id, e.rows) for e in ledger(store_path)] == [
        ("nightly", 0, 1)
    ]


def test_complete_mode_appends_the_whole_result_each_trigger(
    spark, tmp_path, shared_dir, store_path
):
    src = json_input(shared_dir, [[{"g": "a"}, {"g": "b"}], [{"g": "a"}]])
    counts = (
        spark.readStream.schema("g STRING")
        .option("maxFilesPerTrigger", 1)
        .json(src)
        .groupBy("g")
        .count()
    )
    writer = (
        counts.writeStream.format("sqliteq")
        .outputMode("complete")
        .option("path", store_path)
        .option("topic", "counts")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
    )
    query = writer.start()
    query.awaitTermination()
    values = [e.value for e in stored_events(store_path, "counts")]
    assert sorted(values[:2], key=lambda v: v["g"]) == [
        {"g": "a", "count": 1},
        {"g": "b", "count": 1},
    ]
    assert sorted(values[2:], key=lambda v: v["g"]) == [
        {"g": "a", "count": 2},
        {"g": "b", "count": 1},
    ]


def test_a_schema_problem_fails_the_stream_at_start_and_writes_nothing(
    spark, tmp_path, shared_dir, store_path
):
    src = json_input(shared_dir, [[{"value": 1}]])
    stream = spark.readStream.schema("value LONG").json(src)
    with pytest.raises(
        StreamingQueryException,
        match=r"column 'value' is the payload and must be string or binary; got bigint",
    ):
        run_stream(stream, store_path, str(tmp_path / "ck"), topic="out")
    with Store(store_path) as store:
        assert not store.topic("out").exists()


# -- batch: payload shapes ---------------------------------------------------
def test_value_key_and_map_headers_are_stored_as_given(spark, store_path):
    df = spark.createDataFrame(
        [("k1", "v1", {"h": "x"}), (None, "v2", None)],
        "key STRING, value STRING, headers MAP<STRING, STRING>",
    )
    df.coalesce(1).write.format("sqliteq").mode("append").option("topic", "t").save(store_path)
    events = stored_events(store_path, "t")
    assert [(e.key, e.value, e.headers) for e in events] == [
        ("k1", "v1", {"h": "x"}),
        (None, "v2", None),
    ]


def test_binary_value_and_kafka_style_headers(spark, store_path):
    df = spark.createDataFrame(
        [
            (
                bytearray(b"\x00\xff"),
                bytearray(b"k"),
                [("trace", bytearray(b"abc")), ("n", bytearray(b"1"))],
            )
        ],
        "value BINARY, key BINARY, headers ARRAY<STRUCT<key: STRING, value: BINARY>>",
    )
    df.write.format("sqliteq").mode("append").option("path", store_path).option("topic", "t").save()
    (event,) = stored_events(store_path, "t")
    assert (event.value, event.key, event.headers) == (
        b"\x00\xff",
        b"k",
        {"trace": "abc", "n": "1"},
    )


def test_without_a_value_column_each_row_becomes_one_json_object(spark, store_path):
    df = spark.sql(
        "SELECT 1 AS id, 'ann' AS name, CAST(2.50 AS DECIMAL(5,2)) AS price, "
        "DATE'2024-03-01' AS day, TIMESTAMP_NTZ'2024-03-01 10:00:00' AS at, "
        "CAST('NaN' AS DOUBLE) AS ratio, array(1, 2) AS xs, map('a', 1) AS m, "
        "named_struct('x', 1.5D, 'when', DATE'2024-01-02') AS s, CAST(NULL AS STRING) AS missing, "
        "'the-key' AS key, TIMESTAMP'2024-03-01 10:00:00 UTC' AS ts"
    )
    df.write.format("sqliteq").mode("append").option("topic", "t").save(store_path)
    (event,) = stored_events(store_path, "t")
    assert event.key == "the-key"
    ts = event.value.pop("ts")  # ISO-8601 with the session time zone's offset
    assert datetime.fromisoformat(ts) == datetime(2024, 3, 1, 10, tzinfo=UTC)
    assert event.value == {
        "id": 1,
        "name": "ann",
        "price": "2.50",
        "day": "2024-03-01",
        "at": "2024-03-01T10:00:00",
        "ratio": "NaN",
        "xs": [1, 2],
        "m": {"a": 1},
        "s": {"x": 1.5, "when": "2024-01-02"},
        "missing": None,
    }


def test_a_topic_column_routes_rows_with_dense_offsets_per_topic(spark, store_path):
    df = spark.createDataFrame(
        [("a", "1"), ("b", "2"), ("a", "3"), ("c", "4")], "topic STRING, value STRING"
    )
    df.write.format("sqliteq").mode("append").save(store_path)
    assert sorted(e.value for e in stored_events(store_path, "a")) == ["1", "3"]
    assert [e.offset for e in stored_events(store_path, "a")] == [0, 1]
    assert [e.value for e in stored_events(store_path, "b")] == ["2"]
    assert [e.value for e in stored_events(store_path, "c")] == ["4"]


def test_the_topic_option_overrides_a_topic_column(spark, store_path):
    df = spark.createDataFrame([("a", "1")], "topic STRING, value STRING")
    df.write.format("sqliteq").mode("append").option("topic", "fixed").save(store_path)
    assert [e.value for e in stored_events(store_path, "fixed")] == ["1"]
    with Store(store_path) as store:
        assert not store.topic("a").exists()


def test_a_null_topic_in_a_routed_row_fails_the_job_and_writes_nothing(spark, store_path):
    df = spark.createDataFrame([("a", "1"), (None, "2")], "topic STRING, value STRING")
    with pytest.raises(Exception, match="null topic"):
        df.coalesce(1).write.format("sqliteq").mode("append").save(store_path)
    with Store(store_path) as store:
        assert not store.topic("a").exists()


def test_batch_id_option_makes_a_batch_write_exactly_once(spark, store_path):
    df = spark.createDataFrame([("1",), ("2",)], "value STRING")
    for _ in range(2):
        (
            df.write.format("sqliteq")
            .mode("append")
            .option("topic", "t")
            .option("sinkId", "daily")
            .option("batchId", 7)
            .save(store_path)
        )
    assert sorted(e.value for e in stored_events(store_path, "t")) == ["1", "2"]
    assert [(e.sink_id, e.last_batch_id, e.rows) for e in ledger(store_path)] == [("daily", 7, 2)]


# -- queue mode --------------------------------------------------------------
def _jobs(path, queue):
    with Store(path) as store:
        return store.conn.execute(
            "SELECT j.priority, j.available_at - j.enqueued_ms, j.expires_at - j.enqueued_ms, "
            "j.idempotency_key, j.max_attempts, j.value, j.value_type FROM sq_jobs j "
            "JOIN sq_queues q ON q.id = j.queue_id WHERE q.name = ? ORDER BY j.id",
            (queue,),
        ).fetchall()


def test_queue_columns_become_job_properties(spark, store_path):
    df = spark.createDataFrame(
        [("a", 5, 60_000, "k-a", 3, 3_600_000), ("b", None, None, None, None, None)],
        "value STRING, priority INT, delay_ms LONG, idempotency_key STRING, max_attempts SHORT, "
        "ttl_ms LONG",
    )
    df.coalesce(1).write.format("sqliteq").mode("append").option("queue", "work").save(store_path)
    assert _jobs(store_path, "work") == [
        (5, 60_000, 3_600_000, "k-a", 3, "a", 1),
        (0, 0, None, None, None, "b", 1),
    ]


def test_queue_rows_without_value_are_json_jobs_without_the_job_columns(spark, store_path):
    df = spark.createDataFrame([(1, "x", 9)], "id INT, name STRING, priority INT")
    df.write.format("sqliteq").mode("append").option("queue", "work").save(store_path)
    ((priority, _, _, _, _, value, vtype),) = _jobs(store_path, "work")
    assert (priority, json.loads(value), vtype) == (9, {"id": 1, "name": "x"}, 2)


def test_duplicate_idempotency_keys_keep_one_job_within_and_across_batches(
    spark, tmp_path, shared_dir, store_path
):
    src = json_input(
        shared_dir,
        [
            [
                {"value": "first", "idempotency_key": "k1"},
                {"value": "dup", "idempotency_key": "k1"},
                {"value": "other", "idempotency_key": "k2"},
            ],
            [
                {"value": "again", "idempotency_key": "k1"},
                {"value": "new", "idempotency_key": "k3"},
            ],
        ],
    )
    stream = (
        spark.readStream.schema("value STRING, idempotency_key STRING")
        .option("maxFilesPerTrigger", 1)
        .json(src)
        .coalesce(1)
    )
    run_stream(stream, store_path, str(tmp_path / "ck"), queue="work")
    jobs = _jobs(store_path, "work")
    assert sorted((key, value) for _, _, _, key, _, value, _ in jobs) == [
        ("k1", "first"),
        ("k2", "other"),
        ("k3", "new"),
    ]
    (entry,) = ledger(store_path)
    assert entry.last_batch_id == 1


# -- one transaction -----------------------------------------------------------
@pytest.mark.slow
def test_a_million_row_batch_write_is_one_transaction(spark, store_path):
    with Store(store_path) as store:
        store.topic("big").create()
    seen: set[int] = set()
    reads = [0]
    done = threading.Event()

    def reader():
        with Store(store_path) as store:
            while not done.is_set():
                seen.add(
                    store.conn.execute(
                        "SELECT count(*) FROM sq_events e JOIN sq_topics t ON t.id = e.topic_id "
                        "WHERE t.name = 'big'"
                    ).fetchone()[0]
                )
                reads[0] += 1

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        df = spark.range(1_000_000, numPartitions=4).select(
            F.format_string("%010d-%s", "id", F.lit("x" * 80)).alias("value")
        )
        df.write.format("sqliteq").mode("append").option("topic", "big").save(store_path)
    finally:
        done.set()
        thread.join()
    assert seen <= {0, 1_000_000}, f"a reader saw a partial batch: {sorted(seen)}"
    assert 0 in seen and reads[0] > 10
    with Store(store_path) as store:
        assert store.topic("big").bounds() == (0, 1_000_000)
        last = store.read("big", 999_999)[0].value
    assert last.startswith("0000999999-") or len(last) == 91


def test_a_stream_with_async_progress_tracking_is_refused_at_start(spark, tmp_path, store_path):
    # At-least-once progress could replay a batch id over other rows, which the
    # ledger would skip. Spark 4.0-4.3 refuse it for this sink themselves; with
    # Spark's internal override of that check, the sink refuses it, saying why.
    df = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    writer = (
        df.selectExpr("CAST(value AS STRING) AS value").writeStream.format("sqliteq")
        .option("path", store_path).option("topic", "out")
        .option("asyncProgressTrackingEnabled", "true")
    )
    for overridden, refusal in [(False, "(?i)does not support async progress tracking"),
                                (True, "asyncProgressTrackingEnabled=true.*rows would be lost")]:
        if overridden:
            writer = writer.option("_asyncProgressTrackingOverrideSinkSupportCheck", "true")
        writer = writer.option("checkpointLocation", str(tmp_path / f"ckpt-{overridden}"))
        with pytest.raises(Exception, match=refusal):
            query = writer.start()
            try:
                query.awaitTermination(60)
            finally:
                query.stop()
    if os.path.exists(store_path):
        with Store(store_path) as store:
            assert store.topics() == []
