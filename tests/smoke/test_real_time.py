"""A ``realTime`` trigger on ``format("sqliteq")``: Spark's Real-Time Mode takes no Python
data source, and these tests pin the error a user meets, on every supported pyspark.

pyspark 4.1 and later expose ``DataStreamWriter.trigger(realTime=...)``. Spark refuses
a Python source's stream once the query runs its first batch (the query starts, then
fails with ``STREAMING_REAL_TIME_MODE.INPUT_STREAM_NOT_SUPPORTED``) and a Python sink at
``start()`` (``STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST``); neither is
the connector's choice. The answer for latency is ``latencyMode=low`` or the default
``auto`` (docs/reading.md, "Latency").
"""

from __future__ import annotations

import inspect
import os

import pytest
from pyspark.sql.streaming import DataStreamWriter

from spark_queue.store import Store

TIMEOUT_S = 180
HAS_REAL_TIME = "realTime" in inspect.signature(DataStreamWriter.trigger).parameters


def stream(spark, store_path):
    with Store(store_path) as store:
        store.publish_many("t", [{"n": i} for i in range(5)])
    return (spark.readStream.format("sqliteq").option("path", store_path)
            .option("topic", "t").load())


def test_a_real_time_trigger_on_the_sqliteq_source_fails_with_sparks_error(
        spark, store_path, tmp_path):
    # Update mode and a foreach sink: what Real-Time Mode itself asks for (append mode and
    # the file sinks are refused first, with errors of their own).
    writer = (stream(spark, store_path).writeStream.outputMode("update")
              .foreach(lambda row: None)
              .option("checkpointLocation", str(tmp_path / "checkpoint")))
    if not HAS_REAL_TIME:  # pyspark 4.0: no such trigger
        with pytest.raises(TypeError, match="realTime"):
            writer.trigger(realTime="5 seconds")
        return
    query = writer.trigger(realTime="5 seconds").start()
    try:
        with pytest.raises(Exception, match="STREAMING_REAL_TIME_MODE.INPUT_STREAM_NOT_SUPPORTED"):
            query.awaitTermination(TIMEOUT_S)
    finally:
        query.stop()


@pytest.mark.skipif(not HAS_REAL_TIME, reason="pyspark 4.0 has no realTime trigger")
def test_a_real_time_trigger_on_the_sqliteq_sink_is_refused_at_start(spark, tmp_path):
    path = os.path.join(tmp_path, "sink.sqlite")
    writer = (spark.readStream.format("rate").load().selectExpr("CAST(value AS STRING) AS value")
              .writeStream.outputMode("update").format("sqliteq").option("path", path)
              .option("topic", "out").option("checkpointLocation", str(tmp_path / "checkpoint"))
              .trigger(realTime="5 seconds"))
    # pyspark 4.2 and 4.3 (run here) name the allowlist; Real-Time Mode's sink check also
    # has SINK_NOT_SUPPORTED, which pyspark 4.1 (not run here by hand) may raise instead.
    with pytest.raises(Exception, match=r"STREAMING_REAL_TIME_MODE\.(OPERATOR_OR_SINK_NOT_IN_"
                                        r"ALLOWLIST|SINK_NOT_SUPPORTED)"):
        writer.start()
