"""The serverless shape, as a Spark Connect client (tests/smoke/test_serverless_shape.py).

    python serverless_client.py WORK_DIR TABLES_DIR

Databricks serverless compute takes Spark Connect APIs only, and streaming queries with
``availableNow`` only. This client holds a Spark Connect session (``remote("local[2]")``
starts a local Connect server; with Delta's jars where delta-spark is installed), refuses
every streaming start without ``trigger(availableNow=True)``, and runs, from the
installed wheel, with the store on the driver's local disk (WORK_DIR):

- notebook 01 (publish, stream to a table, lag) and notebook 02 (stream to Delta, a
  restart), cell by cell as tests/smoke/test_notebooks.py runs them;
- a queue sink: notebook 01's topic streamed into a queue (``format("sqliteq")``,
  ``option("queue", ...)``);
- ``spark_queue.spark.read_paths(spark)``: the executors' read path, asked without a
  SparkContext.

It prints one ``RESULT <json>`` line: what the test checks against the store.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys

import test_notebooks  # tests/smoke/, this script's folder
from pyspark.sql import SparkSession
from pyspark.sql.connect.streaming.readwriter import DataStreamWriter

QUEUE = "orders_to_bill"


def availablenow_only() -> None:
    """Make Connect's stream writer refuse what serverless refuses: any other trigger, and
    a start with no trigger (Spark's default, a processing-time trigger)."""
    trigger, allowed = DataStreamWriter.trigger, {"availableNow": True}

    def only_available_now(self, **kwargs):
        if kwargs != allowed:
            raise RuntimeError(f"serverless compute: only trigger(availableNow=True); got {kwargs}")
        self._serverless_ok = True
        return trigger(self, **kwargs)

    def guard(original):
        def start(self, *args, **kwargs):
            if not getattr(self, "_serverless_ok", False):
                raise RuntimeError("serverless compute: a stream needs trigger(availableNow=True)")
            return original(self, *args, **kwargs)
        return start

    DataStreamWriter.trigger = only_available_now
    DataStreamWriter.start = guard(DataStreamWriter.start)
    DataStreamWriter.toTable = guard(DataStreamWriter.toTable)


def connect_session() -> SparkSession:
    builder = (SparkSession.builder.remote("local[2]")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false"))
    if importlib.util.find_spec("delta") is not None:
        from delta import configure_spark_with_delta_pip

        builder = configure_spark_with_delta_pip(
            builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog",
                    "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
    spark = builder.getOrCreate()
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    return spark


def main(work_dir: str, tables_dir: str) -> None:
    availablenow_only()
    spark = connect_session()
    notebooks = {n.name: n for n in test_notebooks.NOTEBOOKS}
    quickstart = test_notebooks.run_cell_by_cell(
        notebooks["01_quickstart.py"], spark, work_dir, tables_dir)
    to_delta = test_notebooks.run_cell_by_cell(
        notebooks["02_stream_to_delta.py"], spark, work_dir, tables_dir)
    # The queue sink: every order of notebook 01's store becomes a job, exactly once.
    store_uri = quickstart["store_uri"]
    query = (spark.readStream.format("sqliteq").option("path", store_uri)
             .option("topic", "orders").load().selectExpr("value")
             .writeStream.format("sqliteq").option("path", store_uri).option("queue", QUEUE)
             .option("checkpointLocation",
                     quickstart["driver_uri"](os.path.join(work_dir, "checkpoints", QUEUE)))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    from spark_queue.spark import read_paths  # one mapInArrow job: no SparkContext needed

    print("RESULT " + json.dumps({
        "compiled_read": {host: path.compiled for host, path in read_paths(spark).items()},
        "store": quickstart["store_path"], "queue": QUEUE,
        "table_format": to_delta["fmt"],
        "sensor_rows": spark.read.format(to_delta["fmt"]).load(to_delta["table_path"]).count(),
        "sensors_published": to_delta["published"].stop,
    }), flush=True)
    spark.stop()


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    main(*sys.argv[1:3])
