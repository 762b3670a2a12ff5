# Databricks notebook source
# MAGIC %md
# MAGIC # Stream a topic into Delta Lake, stop, and restart exactly once
# MAGIC
# MAGIC The checkpoint holds the query's offsets, Delta's sink commits each micro-batch
# MAGIC once, and the store's dense offsets make a replayed batch read the same rows. Each
# MAGIC run drains the backlog in batches of at most 2,000 rows (`run_available_now`: on
# MAGIC Spark 4.0 and 4.1 too), the way a scheduled job cluster runs it.
# MAGIC
# MAGIC The `work_dir` widget (default `/local_disk0/spark_queue/stream_to_delta` on
# MAGIC Databricks, `./spark_queue_notebooks/stream_to_delta` elsewhere) holds the store
# MAGIC and the checkpoint, which stay on the driver's local disk together, given to Spark as
# MAGIC `file:` URIs (docs/cluster.md, "Checkpoints", has the rule); the `tables_dir` widget
# MAGIC (default `dbfs:/tmp/spark_queue/stream_to_delta` on Databricks, `tables/` in
# MAGIC `work_dir` elsewhere) holds the table, which executors write: on a multi-node cluster
# MAGIC it must be storage every node sees. After a cluster restart (the driver's disk wiped)
# MAGIC the notebook starts afresh with a new store, checkpoint and table (`readings-<store
# MAGIC id>`); to resume instead, restore the store's backup and its checkpoint first
# MAGIC (docs/cluster.md). Locally this uses Delta when delta-spark is installed (Spark
# MAGIC downloads Delta's jars on first start) and Parquet otherwise.

# COMMAND ----------

# MAGIC %md
# MAGIC **Install** (Databricks Runtime 17.3 LTS or later: Spark 4.0+). Run the next cell once
# MAGIC per cluster session, with the wheel built from a checkout (`pip wheel --no-deps -w dist .`)
# MAGIC and uploaded to a Volume; or attach that wheel as a cluster library instead (Compute >
# MAGIC Libraries), which every notebook on the cluster then has. No extras: the runtime's
# MAGIC pyspark stays. Outside Databricks the cell is a comment.

# COMMAND ----------

# MAGIC %pip install /Volumes/main/default/wheels/spark_queue-0.1.0-py3-none-any.whl

# COMMAND ----------

import os

from spark_queue import Store, register
from spark_queue.checkpoint_repair import repair_checkpoint
from spark_queue.spark import (
    driver_uri,
    replicate_store,
    run_available_now,
    store_table,
    table_format,
    tables_dir,
    work_dir,
)

try:
    spark  # noqa: B018 - Databricks (and a kernel with a session) defines it
except NameError:
    from spark_queue.spark import get_or_create

    spark = get_or_create("spark_queue to delta")
register(spark)
show = globals().get("display") or (lambda df: df.show(truncate=False))

directory = work_dir("stream_to_delta", globals().get("dbutils"))
store_path = os.path.join(directory, "sensors.sqlite")
checkpoint = driver_uri(os.path.join(directory, "checkpoints", "readings"))
# A power cut can leave Spark's newest checkpoint files empty: remove exactly those.
repaired = repair_checkpoint(checkpoint, missing_ok=True)
if repaired.torn:
    print(repaired)
# A replica URL set (the replica_url widget, $SPARK_QUEUE_REPLICA_URL): restore the store if
# the driver's disk lost it, replicate it while this runs, and keep the checkpoint with the
# tables on storage that survives (docs/replication.md).
replicating = replicate_store(store_path, globals().get("dbutils"))
# A replicated store's readers stop at what the replica holds: publish with
# durability="replicated" so what a cell publishes is readable when it returns.
durability = "normal" if replicating is None else "replicated"
if replicating is not None:
    checkpoint = os.path.join(tables_dir("stream_to_delta", globals().get("dbutils")),
                              "checkpoints", "readings")
fmt = table_format(spark)
with Store(store_path, durability=durability) as store:
    # The readings' shape, declared once in the file: publish is held to it and the stream
    # takes its columns (valueSchema=topic). A rerun's same schema stores nothing.
    store.topic("readings").set_schema("sensor INT NOT NULL, celsius DOUBLE")


def publish(count: int) -> range:
    with Store(store_path, durability=durability) as store:
        start = store.topic("readings").latest_offset()
        return store.publish_many("readings", [{"sensor": i % 5, "celsius": 20 + i % 9}
                                               for i in range(start, start + count)])



def drain() -> None:
    """Everything published so far, in micro-batches of at most 2,000 rows; then stop."""
    stream = (
        spark.readStream.format("sqliteq")
        .option("valueSchema", "topic")
        .option("path", driver_uri(store_path))
        .option("topic", "readings")
        .option("maxRowsPerTrigger", 2000)
        .load()
    )
    run = run_available_now(
        stream.writeStream.format(fmt).option("checkpointLocation", checkpoint), table_path
    )
    print(f"micro-batches of {list(run.batches)} rows in {run.runs} run(s)")
    assert all(rows <= 2000 for rows in run.batches), run


# COMMAND ----------

# MAGIC %md ## First run

# COMMAND ----------

publish(5000)
table_path = store_table(tables_dir("stream_to_delta", globals().get("dbutils")), "readings",
                         store_path)
print(f"store {store_path}; {fmt} table {table_path}")
drain()
print("rows in the table after the first run:", spark.read.format(fmt).load(table_path).count())

# COMMAND ----------

# MAGIC %md ## More events arrive; restart from the same checkpoint

# COMMAND ----------

published = publish(3000)
drain()
table = spark.read.format(fmt).load(table_path)
show(table.groupBy("sensor").count().orderBy("sensor"))
print("rows in the table after the restart:", table.count())
assert table.count() == published.stop  # every event published so far, exactly once
if fmt == "delta":
    show(spark.sql(f"DESCRIBE HISTORY delta.`{table_path}`").select("version", "operation"))
