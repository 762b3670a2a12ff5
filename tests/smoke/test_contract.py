"""The contract on every supported pyspark (4.0-4.3), from an installed wheel.

``tests/smoke/matrix.py`` runs this file in one venv per pyspark minor with
spark_queue installed from a freshly built wheel (not the checkout); the full
suite runs it too. Self-contained on purpose: it imports nothing from the
checkout's tests, so the checkout never lands on ``sys.path``.
"""

from __future__ import annotations

import json
import os

import pytest

from spark_queue.store import Store

TIMEOUT_S = 180
MODES = ["auto", "throughput", "low"]


def pyspark_version():
    import pyspark

    return tuple(int(p) for p in pyspark.__version__.split(".")[:2])


def stream(spark, path, **options):
    reader = spark.readStream.format("sqliteq").option("path", path)
    for name, value in options.items():
        reader = reader.option(name, str(value))
    return reader.load()


def run_until_caught_up(spark, path, checkpoint, **options):
    """Run a processing-time query until it has read everything published; return batch sizes."""
    sizes = []
    query = (
        stream(spark, path, **options)
        .writeStream.foreachBatch(lambda df, _: sizes.append(df.count()))
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="0 seconds")
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return [n for n in sizes if n]


def test_spark_queue_comes_from_the_installed_wheel_in_the_matrix():
    import pyspark_sqliteq
    import spark_queue

    if os.environ.get("SPARK_QUEUE_SMOKE_FROM_WHEEL") == "1":
        assert "site-packages" in spark_queue.__file__, spark_queue.__file__
    assert pyspark_sqliteq.DefaultSource.name() == "sqliteq"


@pytest.mark.skipif("SPARK_QUEUE_SMOKE_PYTHON" not in os.environ,
                    reason="no Python version named (matrix.py names 3.13 on its 3.13 run)")
def test_the_driver_and_the_workers_run_the_python_the_matrix_names(spark):
    import sys

    wanted = os.environ["SPARK_QUEUE_SMOKE_PYTHON"]
    driver = f"{sys.version_info.major}.{sys.version_info.minor}"
    workers = set(spark.range(2).rdd.map(
        lambda _: f"{sys.version_info.major}.{sys.version_info.minor}").collect())
    assert (driver, workers) == (wanted, {wanted})


@pytest.mark.skipif("SPARK_QUEUE_SMOKE_JAVA" not in os.environ,
                    reason="no Java version named (matrix.py names 21 on its 3.13 runs)")
def test_the_jvm_runs_the_java_the_matrix_names(spark):
    version = spark.range(1).selectExpr("java_method('java.lang.System', 'getProperty', "
                                        "'java.specification.version') AS v").first()["v"]
    assert version == os.environ["SPARK_QUEUE_SMOKE_JAVA"]


@pytest.mark.skipif(os.environ.get("SPARK_QUEUE_SMOKE_FROM_WHEEL") != "1",
                    reason="a checkout's editable install may lack the build (make install)")
def test_the_executors_run_the_compiled_read_of_the_installed_wheel(spark):
    from spark_queue.spark import read_paths

    paths = read_paths(spark)
    assert paths and all(path.compiled for path in paths.values()), paths


def test_format_is_discovered_without_register_and_register_is_harmless(spark, store_path):
    with Store(store_path) as store:
        store.publish_many("t", [{"n": i} for i in range(5)])
    rows = spark.read.format("sqliteq").option("topic", "t").load(store_path).collect()
    assert [r.offset for r in rows] == list(range(5))
    import spark_queue

    spark_queue.register(spark)  # already discovered: must not raise
    assert spark.read.format("sqliteq").option("topic", "t").load(store_path).count() == 5


def test_batch_read_gives_kafka_rows_and_typed_columns(spark, store_path):
    with Store(store_path) as store:
        store.publish_many("t", [{"id": i, "name": f"n{i}"} for i in range(100)])
    kafka = (
        spark.read.format("sqliteq").option("topic", "t").option("valueFormat", "string")
        .load(store_path).orderBy("offset").collect()
    )
    assert [(r.topic, r.partition, r.offset) for r in kafka] == [("t", 0, i) for i in range(100)]
    assert kafka[7].value == '{"id":7,"name":"n7"}'
    typed = (
        spark.read.format("sqliteq").schema("id LONG, name STRING").option("topic", "t")
        .option("endingOffsets", '{"t": 50}').load(store_path).orderBy("id").collect()
    )
    assert [(r.id, r.name) for r in typed] == [(i, f"n{i}") for i in range(50)]


def test_batch_write_publishes_and_enqueues_exactly_once(spark, store_path):
    df = spark.createDataFrame([(i, f"v{i}") for i in range(20)], "id LONG, v STRING")
    (df.write.format("sqliteq").mode("append").option("topic", "out")
     .option("createStore", "true").save(store_path))
    for _ in range(2):  # the ledger skips the second write of batch 0
        (df.write.format("sqliteq").mode("append").option("topic", "led")
         .option("sinkId", "s").option("batchId", 0).save(store_path))
    jobs = df.selectExpr("to_json(struct(id)) AS value", "CAST(id AS STRING) AS idempotency_key")
    for _ in range(2):  # idempotency keys keep one job per id
        jobs.write.format("sqliteq").mode("append").option("queue", "q").save(store_path)
    with Store(store_path) as store:
        out = [e.value for e in store.read("out", 0, limit=100)]
        assert sorted(out, key=lambda v: v["id"]) == [{"id": i, "v": f"v{i}"} for i in range(20)]
        assert store.topic("led").bounds() == (0, 20)
        queue = store.queue("q")
        claimed = queue.claim(100, lease_ms=60_000)
        assert sorted(j.payload for j in claimed) == sorted(f'{{"id":{i}}}' for i in range(20))


@pytest.mark.parametrize("mode", MODES)
def test_stream_max_rows_is_exact_and_a_restart_reads_only_new_rows(
    spark, store_path, tmp_path, mode
):
    ckpt = str(tmp_path / "ckpt")
    with Store(store_path) as store:
        store.publish_many("t", range(2_500))
        sizes = run_until_caught_up(
            spark, store_path, ckpt, topic="t", maxRowsPerTrigger=1000, latencyMode=mode
        )
        assert sizes == [1000, 1000, 500]
        store.publish_many("t", range(700))
        sizes = run_until_caught_up(
            spark, store_path, ckpt, topic="t", maxRowsPerTrigger=1000, latencyMode=mode
        )
        assert sizes == [700]


@pytest.mark.parametrize("mode", MODES)
def test_available_now_reads_what_the_version_documents(spark, store_path, tmp_path, mode):
    with Store(store_path) as store:
        store.publish_many("t", range(2_500))
    sizes = []
    query = (
        stream(spark, store_path, topic="t", maxRowsPerTrigger=1000, latencyMode=mode)
        .writeStream.foreachBatch(lambda df, _: sizes.append(df.count()))
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True).start()
    )
    try:
        assert query.awaitTermination(TIMEOUT_S)
    finally:
        query.stop()
    if pyspark_version() >= (4, 2):
        assert [n for n in sizes if n] == [1000, 1000, 500]
    else:  # README "Spark versions": one bounded batch per run before 4.2
        assert [n for n in sizes if n] == [1000]


@pytest.mark.parametrize("max_shipped", ["10000", "1"])
def test_the_default_mode_reports_lag_where_the_version_has_it(
    spark, store_path, tmp_path, max_shipped
):
    # lowLatencyMaxRows=1: every batch is read by executors; 10000: shipped with the plan.
    with Store(store_path) as store:
        store.publish_many("t", range(2_500))
    query = (
        stream(spark, store_path, topic="t", maxRowsPerTrigger=1000,
               lowLatencyMaxRows=max_shipped)
        .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True).start()
    )
    try:
        assert query.awaitTermination(TIMEOUT_S)
    finally:
        query.stop()
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    latest = [p["sources"][0].get("latestOffset") for p in progress]
    if pyspark_version() >= (4, 2):  # README "Spark versions": lag from 4.2
        assert [json.loads(x) if isinstance(x, str) else x for x in latest] == [{"t": 2500}] * 3
    else:
        assert [p["numInputRows"] for p in progress] == [1000]


def test_stream_sink_writes_every_row_once_across_a_restart(spark, store_path, tmp_path):
    ckpt = str(tmp_path / "ckpt")
    with Store(store_path) as store:
        store.publish_many("in", [{"n": i} for i in range(300)])

        def copy():
            query = (
                stream(spark, store_path, topic="in", valueFormat="string")
                .selectExpr("CAST(offset AS STRING) AS key", "value")
                .writeStream.format("sqliteq").queryName("copy_in_to_out")
                .option("path", store_path).option("topic", "out")
                .option("checkpointLocation", ckpt).trigger(processingTime="0 seconds").start()
            )
            try:
                query.processAllAvailable()
            finally:
                query.stop()

        copy()
        store.publish_many("in", [{"n": i} for i in range(300, 450)])
        copy()
        events = list(store.read("out", 0, limit=1000))
        assert sorted(int(e.key) for e in events) == list(range(450))
        assert sorted(json.loads(e.value)["n"] for e in events) == list(range(450))


def test_kafka_option_names_work_on_the_source_and_the_sink(spark, store_path, tmp_path):
    with Store(store_path) as store:
        store.publish_many("t", [f"v{i}" for i in range(10)])
    df = (
        spark.read.format("sqliteq").option("path", store_path)
        .option("kafka.bootstrap.servers", "ignored:9092").option("subscribe", "t")
        .option("startingOffsets", '{"t":{"0":3}}').option("endingOffsets", '{"t":{"0":8}}')
        .load().selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
    )
    assert [r.value for r in df.orderBy("value").collect()] == [f"v{i}" for i in range(3, 8)]
    query = (
        stream(spark, store_path, subscribe="t", **{"kafka.bootstrap.servers": "x:9092"})
        .selectExpr("CAST(value AS STRING) AS value").writeStream.format("sqliteq")
        .option("kafka.bootstrap.servers", "ignored:9092").option("path", store_path)
        .option("topic", "copy").option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True).start()
    )
    try:
        assert query.awaitTermination(TIMEOUT_S)
    finally:
        query.stop()
    with Store(store_path) as store:
        assert sorted(e.value for e in store.read("copy", 0)) == sorted(f"v{i}" for i in range(10))
