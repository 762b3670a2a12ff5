"""SIGKILL the driver of a query reading sqliteq: every event still lands once.

Each query runs in a driver process of its own, so a SIGKILL of its process
group is a whole-driver crash (Python, JVM, workers). It runs in every read
mode: the default (``auto``: these 700-row batches ship with the plan),
``throughput`` (executors read every batch) and ``low``.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from spark_queue.store import Store
from tests.end_to_end import drivers

pytestmark = pytest.mark.slow

CRASH_APP = """
    import json, os, sys
    from pyspark.sql import SparkSession, functions as F

    store_path, checkpoint, out, mode, latency_mode = sys.argv[1:6]
    master = os.environ.get("SPARK_QUEUE_TEST_MASTER", "local[2]")
    spark = (SparkSession.builder.master(master).appName("sqliteq-crash")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    # No register() call: the format is found by Spark's pyspark_* module lookup.
    reader = (spark.readStream.format("sqliteq").option("path", store_path)
              .option("topic", "events").option("maxRowsPerTrigger", 700))
    if latency_mode != "auto":  # auto is the default: no option
        reader = reader.option("latencyMode", latency_mode)
    df = (reader.load()
          .selectExpr("topic", "offset", "CAST(value AS STRING) AS value"))
    writer = (df.writeStream.format("parquet").option("path", out)
              .option("checkpointLocation", checkpoint))
    if mode == "drain":
        writer.trigger(availableNow=True).start().awaitTermination()
        # Spark's reader keeps to the files the sink's log committed.
        rows = spark.read.parquet(out)
        expected = F.concat(F.lit("event-"), F.col("offset").cast("string"))
        mismatched = rows.where(F.col("value") != expected).count()
        offsets = sorted(r.offset for r in rows.select("offset").collect())
        print("RESULT " + json.dumps({"offsets": offsets, "mismatched_values": mismatched}))
    else:
        writer.trigger(processingTime="100 milliseconds").start().awaitTermination()
"""


def _commits(checkpoint):
    try:
        return len([n for n in os.listdir(os.path.join(checkpoint, "commits")) if n.isdigit()])
    except FileNotFoundError:
        return 0


# Every read mode, each under one master: the default (auto) with executors in JVMs of
# their own, where a driver's SIGKILL leaves them behind; the forced modes on local[2].
@pytest.mark.parametrize("latency_mode", [
    pytest.param("auto", marks=pytest.mark.master("local-cluster")),
    pytest.param("throughput", marks=pytest.mark.master("local[2]")),
    pytest.param("low", marks=pytest.mark.master("local[2]")),
])
def test_sigkill_the_driver_three_times_then_every_event_is_in_the_parquet_sink_once(
    tmp_path, latency_mode
):
    store_path = str(tmp_path / "store.sqlite")
    checkpoint, out = str(tmp_path / "ckpt"), str(tmp_path / "out")
    script = drivers.write_script(tmp_path, CRASH_APP)
    rng = random.Random(20240501)
    total = 0
    with Store(store_path) as store:
        for _ in range(3):
            store.publish_many("events", (f"event-{total + i}" for i in range(8_000)))
            total += 8_000
            before = _commits(checkpoint)
            log = tmp_path / f"driver-{total}.log"
            proc = drivers.start(
                script, store_path, checkpoint, out, "run", latency_mode, log=log
            )
            try:
                deadline = time.monotonic() + 240
                while _commits(checkpoint) <= before:
                    assert proc.poll() is None, log.read_text()[-3000:]
                    assert time.monotonic() < deadline, "no micro-batch committed in time"
                    time.sleep(0.1)
                time.sleep(rng.uniform(0.0, 2.0))  # somewhere inside a later batch
            finally:
                drivers.kill_group(proc)
        store.publish_many("events", (f"event-{total + i}" for i in range(1_000)))
        total += 1_000
    result = drivers.run(script, store_path, checkpoint, out, "drain", latency_mode).result()
    assert result["offsets"] == list(range(total))
    assert result["mismatched_values"] == 0
