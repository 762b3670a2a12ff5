# Databricks notebook source
# MAGIC %md
# MAGIC # spark_queue quickstart: publish, stream, inspect lag
# MAGIC
# MAGIC A producer publishes events into a SQLite store file; Spark streams them with
# MAGIC `format("sqliteq")` in micro-batches; the store shows each consumer's lag.
# MAGIC Run it again and it resumes: the stream picks up where its checkpoint stopped.
# MAGIC After a cluster restart (the driver's disk wiped, the store and checkpoint with it)
# MAGIC it starts afresh: a new store, a new checkpoint, a new table.
# MAGIC
# MAGIC **On Databricks** (Runtime 17.3 LTS or later, single- or multi-node): install the
# MAGIC wheel with the next cell or as a cluster library.
# MAGIC
# MAGIC **Where the store lives**: the `work_dir` widget (default
# MAGIC `/local_disk0/spark_queue/quickstart`, the driver's local disk) holds the store file
# MAGIC and the checkpoints, which Spark is given as `file:` URIs: a path without a scheme
# MAGIC is DBFS on Databricks (docs/cluster.md, "Checkpoints"). A live store needs a local
# MAGIC disk: DBFS (`/dbfs/...`) and Unity Catalog Volumes (`/Volumes/...`) cannot keep
# MAGIC SQLite's locks, and the store refuses to open there. The driver's disk is gone when
# MAGIC the cluster terminates: to keep the store, set the `replica_url` widget (`s3://...`
# MAGIC or `file:///Volumes/...`): the notebook then restores a missing store from it and
# MAGIC replicates it while it runs (docs/replication.md). On a
# MAGIC multi-node cluster executors cannot see the driver's disk: the connector's defaults
# MAGIC ship rows from the driver there (docs/cluster.md), and tables go to the `tables_dir`
# MAGIC widget, storage every node sees (default `dbfs:/tmp/spark_queue/quickstart`; a
# MAGIC Volume path on Unity Catalog), one table per store file (`orders-<store id>`).
# MAGIC Outside Databricks the directories are `./spark_queue_notebooks/quickstart` (or
# MAGIC `$SPARK_QUEUE_NOTEBOOK_DIR/quickstart`) and its `tables/`.

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

from spark_queue import Record, Store, register
from spark_queue.checkpoint_repair import repair_checkpoint
from spark_queue.spark import (
    driver_uri,
    replicate_store,
    run_available_now,
    store_table,
    tables_dir,
    work_dir,
)
from spark_queue.spark.query_progress import offsets

try:
    spark  # noqa: B018 - Databricks (and a kernel with a session) defines it
except NameError:
    from spark_queue.spark import get_or_create

    spark = get_or_create("spark_queue quickstart", delta=False)
register(spark)
show = globals().get("display") or (lambda df: df.show(truncate=False))

directory = work_dir("quickstart", globals().get("dbutils"))
store_path = os.path.join(directory, "quickstart.sqlite")
store_uri = driver_uri(store_path)  # what Spark is given: the driver's disk, never DBFS
checkpoint = driver_uri(os.path.join(directory, "checkpoints", "orders"))
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
    checkpoint = os.path.join(tables_dir("quickstart", globals().get("dbutils")),
                              "checkpoints", "orders")
print(f"store {store_path}; checkpoints under {os.path.dirname(checkpoint)}")

# COMMAND ----------

# MAGIC %md ## 1. Publish events (plain Python: this is what a producer service does)

# COMMAND ----------

with Store(store_path, durability=durability) as store:
    # The events' shape, declared once in the file: every writer is held to it, and readers
    # take its columns (valueSchema=topic). A rerun's same schema stores nothing.
    store.topic("orders").set_schema("order BIGINT NOT NULL, amount DOUBLE")
    first = store.topic("orders").latest_offset()
    published = store.publish_many(
        "orders",
        [Record({"order": i, "amount": round(10 + i * 0.5, 2)}, key=f"customer-{i % 7}")
         for i in range(first, first + 1000)],
    )
print(f"published offsets {published.start}..{published.stop - 1}")
orders_table = store_table(tables_dir("quickstart", globals().get("dbutils")), "orders",
                           store_path)

# COMMAND ----------

# MAGIC %md ## 2. Stream them with Spark: Kafka-shaped rows, 250 per micro-batch, exactly once
# MAGIC
# MAGIC `run_available_now` is `trigger(availableNow=True)` plus `awaitTermination()` that
# MAGIC drains the backlog in batches of at most `maxRowsPerTrigger` rows on every Spark version
# MAGIC (Spark 4.0 and 4.1 read one such batch per availableNow run; it runs again until done).

# COMMAND ----------

raw = (
    spark.readStream.format("sqliteq")
    .option("path", store_uri)
    .option("topic", "orders")
    .option("keyFormat", "string")
    .option("valueFormat", "string")
    .option("consumer", "quickstart")
    .option("maxRowsPerTrigger", 250)
    .load()
)
run = run_available_now(
    raw.writeStream.format("parquet").option("checkpointLocation", checkpoint), orders_table
)
print(f"micro-batches of {list(run.batches)} rows in {run.runs} run(s)")
orders = spark.read.parquet(orders_table)
# Every event published so far, each exactly once, never more than 250 per micro-batch.
assert orders.count() == orders.select("offset").distinct().count() == published.stop
assert run.batches and all(rows <= 250 for rows in run.batches), run
show(orders.select("offset", "key", "value", "timestamp").orderBy("offset").limit(5))

typed = (
    spark.read.format("sqliteq")
    .option("valueSchema", "topic")  # the columns the topic declared
    .option("path", store_uri)
    .option("topic", "orders")
    .load()
)
show(typed.selectExpr("count(*) AS orders", "round(sum(amount), 2) AS revenue"))

# COMMAND ----------

# MAGIC %md ## 3. Inspect lag: publish more, then ask the store and the query's progress

# COMMAND ----------

with Store(store_path, durability=durability) as store:
    read_before = store.topic("orders").latest_offset()  # what the query has read: all of it
    store.publish_many("orders", [{"order": i, "amount": 1.0} for i in range(300)])
    for consumer in store.consumers("orders"):
        print(f"consumer {consumer.consumer}: next offset {consumer.next_offset}, "
              f"latest {consumer.latest}, lag {consumer.lag}")
    latest = store.topic("orders").latest_offset()
last = run.query.lastProgress["sources"][0]
print("the query's last batch ended at", offsets(last["endOffset"]), "; the topic's latest is",
      latest)
assert orders.count() == offsets(last["endOffset"])["orders"] == read_before
