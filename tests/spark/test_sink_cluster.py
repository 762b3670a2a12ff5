"""The sink with separate executor JVMs (local-cluster[2,1,1024]).

Executors never open the store for writing: they pack rows into commit
messages and the driver commits them. Together with the driver-shipped read
path, a sqliteq -> sqliteq stream needs no executor access to the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from spark_queue.store import Store

pytestmark = pytest.mark.slow

APP = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession

    path, checkpoint = sys.argv[1:3]
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("sink-cluster")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.executor.memory", "1g").getOrCreate())
    query = (spark.readStream.format("sqliteq").option("path", path).option("topic", "in")
             .option("readPath", "driver").option("maxRowsPerTrigger", 1500)
             .option("valueFormat", "string").load()
             .selectExpr("CAST(offset AS STRING) AS key", "value")
             .writeStream.format("sqliteq").option("path", path).option("topic", "out")
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    (spark.range(2000).repartition(4)
         .selectExpr("id", "concat('job-', id) AS idempotency_key",
                     "CAST(id % 3 AS INT) AS priority")
         .write.format("sqliteq").mode("append").option("queue", "jobs").save(path))
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    print("RESULT " + json.dumps({"executors": executors}), flush=True)
    spark.stop()
    """
)


def test_sink_publishes_and_enqueues_exactly_once_from_local_cluster_executors(tmp_path):
    path = str(tmp_path / "store.sqlite")
    with Store(path) as store:
        store.publish_many("in", ({"n": i} for i in range(5000)))
    script = tmp_path / "app.py"
    script.write_text(APP)
    run = subprocess.run(
        [sys.executable, str(script), path, str(tmp_path / "checkpoint")],
        capture_output=True, text=True, timeout=900,
        env=dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable),
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert run.returncode == 0 and lines, run.stdout[-2000:] + run.stderr[-4000:]
    assert json.loads(lines[0][7:]) == {"executors": 2}
    with Store(path) as store:
        out = store.read("out")
        assert sorted(int(e.key) for e in out) == list(range(5000))
        assert sorted(json.loads(e.value)["n"] for e in out) == list(range(5000))
        jobs = store.queue("jobs")
        assert jobs.stats().ready == 2000
        assert sorted(j.payload["id"] for j in jobs.claim(2000)) == list(range(2000))
