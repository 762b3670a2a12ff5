"""Helpers for the Spark tests: run a stream to its end and collect what each batch saw."""

from __future__ import annotations

import json

from spark_queue.spark.query_progress import offsets

TIMEOUT_S = 180

# Options every stream() of a test gets unless it names them itself: the stream
# suite sets {"latencyMode": ...} to run each of its tests in both read modes.
STREAM_DEFAULTS: dict[str, str] = {}


def stream(spark, path, **options):
    reader = spark.readStream.format("sqliteq").option("path", path)
    for name, value in {**STREAM_DEFAULTS, **options}.items():
        reader = reader.option(name, str(value))
    return reader.load()


def run_available_now(spark, path, checkpoint, columns=("topic", "offset"), **options):
    """Run an availableNow query to its end; return ([(batch_id, rows)], the query)."""
    batches = []

    def collect(df, batch_id):
        batches.append((batch_id, [tuple(row) for row in df.select(*columns).collect()]))

    query = (
        stream(spark, path, **options)
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(TIMEOUT_S), "availableNow query did not finish"
    finally:
        query.stop()
    return batches, query


def source_progress(query):
    """(numInputRows, latestOffset dict, endOffset dict) of each recorded trigger."""
    result = []
    for progress in query.recentProgress:
        source = progress["sources"][0]
        latest = source.get("latestOffset")
        end = source.get("endOffset")
        result.append(
            (
                progress["numInputRows"],
                json.loads(latest) if isinstance(latest, str) else latest,
                None if end is None else offsets(end),  # the topics (no store identity)
            )
        )
    return result


def copy_topic(spark, src, dst, checkpoint, **source_options):
    """Stream topic "in" of ``src`` into topic "out" of ``dst`` (key: the source offset)
    with availableNow; return at its end, or raise the query's failure."""
    query = (
        stream(spark, src, topic="in", valueFormat="string", **source_options)
        .selectExpr("CAST(offset AS STRING) AS key", "value")
        .writeStream.format("sqliteq").option("path", dst).option("topic", "out")
        .option("createStore", "true").option("checkpointLocation", checkpoint)
        .trigger(availableNow=True).start()
    )
    try:
        query.awaitTermination()
    finally:
        query.stop()
