"""The source in driver processes of its own: SIGKILL crashes, and local-cluster executors.

Each query runs in a subprocess (its own JVM) started in a new session, so a
SIGKILL of the process group is a whole-driver crash (Python, JVM, workers).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from spark_queue.store import Store

pytestmark = pytest.mark.slow

CRASH_APP = textwrap.dedent(
    """
    import os, sys
    from pyspark.sql import SparkSession

    store_path, checkpoint, out, mode = sys.argv[1:5]
    master = os.environ.get("SPARK_QUEUE_TEST_MASTER", "local[2]")
    spark = (SparkSession.builder.master(master).appName("sqliteq-crash")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    # No register() call: the format is found by Spark's pyspark_* module lookup.
    df = (spark.readStream.format("sqliteq").option("path", store_path)
          .option("topic", "events").option("maxRowsPerTrigger", 700).load()
          .selectExpr("topic", "offset", "CAST(value AS STRING) AS value"))
    writer = (df.writeStream.format("parquet").option("path", out)
              .option("checkpointLocation", checkpoint))
    if mode == "drain":
        writer.trigger(availableNow=True).start().awaitTermination()
    else:
        writer.trigger(processingTime="100 milliseconds").start().awaitTermination()
    """
)


def _commits(checkpoint):
    try:
        return len([n for n in os.listdir(os.path.join(checkpoint, "commits")) if n.isdigit()])
    except FileNotFoundError:
        return 0


def _start(script, *args):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    return subprocess.Popen(
        [sys.executable, script, *args], env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def _kill_group(proc):
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait for the JVM and workers to be gone too
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    raise AssertionError("driver process group survived SIGKILL")


def test_sigkill_the_driver_three_times_then_every_event_is_in_the_parquet_sink_once(
    spark, tmp_path
):
    store_path = str(tmp_path / "store.sqlite")
    checkpoint, out = str(tmp_path / "ckpt"), str(tmp_path / "out")
    script = tmp_path / "crash_app.py"
    script.write_text(CRASH_APP)
    rng = random.Random(20240501)
    total = 0
    with Store(store_path) as store:
        for _ in range(3):
            store.publish_many("events", (f"event-{total + i}" for i in range(8_000)))
            total += 8_000
            before = _commits(checkpoint)
            proc = _start(str(script), store_path, checkpoint, out, "run")
            try:
                deadline = time.monotonic() + 240
                while _commits(checkpoint) <= before:
                    assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
                    assert time.monotonic() < deadline, "no micro-batch committed in time"
                    time.sleep(0.1)
                time.sleep(rng.uniform(0.0, 2.0))  # somewhere inside a later batch
            finally:
                _kill_group(proc)
        store.publish_many("events", (f"event-{total + i}" for i in range(1_000)))
        total += 1_000
    proc = _start(str(script), store_path, checkpoint, out, "drain")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]
    rows = spark.read.parquet(out).select("offset", "value").collect()
    offsets = sorted(r.offset for r in rows)
    assert offsets == list(range(total))
    assert all(r.value == f"event-{r.offset}" for r in rows)


LOCAL_CLUSTER_APP = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession

    store_path, checkpoint = sys.argv[1:3]
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("sqliteq-cluster")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.executor.memory", "1g").getOrCreate())
    result = {}
    batches = []

    def collect(df, batch_id):
        batches.append(sorted(r.offset for r in df.select("offset").collect()))

    query = (spark.readStream.format("sqliteq").option("path", store_path)
             .option("topic", "events").option("maxRowsPerTrigger", 1000)
             .option("readPath", "driver").option("rowsPerPartition", 300).load()
             .writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    result["stream_batches"] = batches
    df = (spark.read.format("sqliteq").option("path", store_path).option("topic", "events")
          .option("readPath", "driver").option("rowsPerPartition", 700).load())
    result["batch_offsets"] = sorted(r.offset for r in df.select("offset").collect())
    typed = (spark.read.format("sqliteq").schema("n LONG").option("path", store_path)
             .option("topic", "events").option("readPath", "driver").load())
    result["typed_sum"] = typed.groupBy().sum("n").first()[0]
    # Block managers: the driver's plus one per executor JVM.
    result["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()
    """
)


def test_local_cluster_executors_with_the_driver_shipped_path(tmp_path):
    store_path = str(tmp_path / "store.sqlite")
    with Store(store_path) as store:
        store.publish_many("events", ({"n": i} for i in range(5_000)))
    script = tmp_path / "cluster_app.py"
    script.write_text(LOCAL_CLUSTER_APP)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.Popen(
        [sys.executable, str(script), store_path, str(tmp_path / "ckpt")], env=env,
        start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            _kill_group(proc)
    assert proc.returncode == 0, err[-3000:]
    result = json.loads(out.split("RESULT ", 1)[1])
    assert result["executors"] == 2  # two executor JVMs besides the driver
    batches = result["stream_batches"]
    assert sorted(o for batch in batches for o in batch) == list(range(5_000))
    assert max(len(batch) for batch in batches) <= 1000
    assert result["batch_offsets"] == list(range(5_000))
    assert result["typed_sum"] == sum(range(5_000))
