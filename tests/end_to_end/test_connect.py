"""The source and the sink through Spark Connect (``SparkSession.builder.remote``).

A Connect session cannot share a JVM with the classic test session, so it
runs in its own process: ``remote("local[2]")`` starts a local Connect server.
"""

from __future__ import annotations

import json

import pytest

from spark_queue.store import Store
from tests.end_to_end import drivers

pytestmark = pytest.mark.slow

CLIENT = """
    import json, sys
    from pyspark.sql import SparkSession
    import spark_queue

    path, checkpoint = sys.argv[1:3]
    spark = SparkSession.builder.remote("local[2]").getOrCreate()
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    spark_queue.register(spark)
    batch = (spark.read.format("sqliteq").option("path", path).option("topic", "in")
             .schema("n LONG").load())
    result = {"batch_read_sum": batch.groupBy().sum("n").first()[0]}
    (spark.range(50).selectExpr("CAST(id AS STRING) AS value")
         .write.format("sqliteq").mode("append").option("topic", "batch_out").save(path))
    query = (spark.readStream.format("sqliteq").option("path", path).option("topic", "in")
             .option("maxRowsPerTrigger", 40).option("valueFormat", "string").load()
             .selectExpr("CAST(offset AS STRING) AS key", "value")
             .writeStream.format("sqliteq").option("path", path).option("topic", "stream_out")
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()
"""


def test_source_and_sink_work_through_spark_connect(tmp_path):
    path = str(tmp_path / "store.sqlite")
    with Store(path) as store:
        store.publish_many("in", [{"n": i} for i in range(100)])
    script = drivers.write_script(tmp_path, CLIENT)
    result = drivers.run(script, path, tmp_path / "checkpoint").result()
    assert result == {"batch_read_sum": sum(range(100))}
    with Store(path) as store:
        assert sorted(int(e.value) for e in store.read("batch_out")) == list(range(50))
        streamed = store.read("stream_out")
        assert sorted(int(e.key) for e in streamed) == list(range(100))
        assert {e.value for e in streamed} == {json.dumps({"n": i}, separators=(",", ":"))
                                               for i in range(100)}
