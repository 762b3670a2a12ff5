# Databricks notebook source
# MAGIC %md
# MAGIC # spark_queue quickstart: publish, stream, inspect lag
# MAGIC
# MAGIC A producer publishes events into a SQLite store file; Spark streams them with
# MAGIC `format("sqliteq")` in micro-batches; the store shows each consumer's lag.
# MAGIC On Databricks, build a wheel from a checkout (`pip wheel --no-deps -w dist .`),
# MAGIC upload it and install it on the cluster first
# MAGIC (`%pip install /path/to/spark_queue-0.1.0-py3-none-any.whl`, no extras: the
# MAGIC cluster's pyspark stays); the store file lives on the driver's local disk.

# COMMAND ----------

import os
import tempfile

import spark_queue
from spark_queue.store import Record, Store

try:
    spark  # noqa: B018 - Databricks (and a kernel with a session) defines it
except NameError:
    from spark_queue.connector.session import get_or_create

    spark = get_or_create("spark_queue quickstart", delta=False)
spark_queue.register(spark)
show = globals().get("display") or (lambda df: df.show(truncate=False))

work_dir = os.environ.get("SPARK_QUEUE_NOTEBOOK_DIR") or tempfile.mkdtemp(prefix="sq-quickstart-")
store_path = os.path.join(work_dir, "quickstart.sqlite")
checkpoint = os.path.join(work_dir, "checkpoints", "quickstart")

# COMMAND ----------

# MAGIC %md ## 1. Publish events (plain Python: this is what a producer service does)

# COMMAND ----------

with Store(store_path) as store:
    offsets = store.publish_many(
        "orders",
        [Record({"order": i, "amount": round(10 + i * 0.5, 2)}, key=f"customer-{i % 7}")
         for i in range(1000)],
    )
print(f"published offsets {offsets.start}..{offsets.stop - 1}")

# COMMAND ----------

# MAGIC %md ## 2. Stream them with Spark: Kafka-shaped rows, then typed columns

# COMMAND ----------

raw = (
    spark.readStream.format("sqliteq")
    .option("path", store_path)
    .option("topic", "orders")
    .option("valueFormat", "string")
    .option("consumer", "quickstart")
    .option("maxRowsPerTrigger", 250)
    .load()
)
query = (
    raw.writeStream.format("memory")
    .queryName("orders_raw")
    .option("checkpointLocation", checkpoint)
    .trigger(availableNow=True)
    .start()
)
query.awaitTermination()
batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
print(f"micro-batches of {batches} rows")
show(spark.sql("SELECT offset, key, value, timestamp FROM orders_raw ORDER BY offset LIMIT 5"))

typed = (
    spark.read.format("sqliteq")
    .schema("order LONG, amount DOUBLE")
    .option("path", store_path)
    .option("topic", "orders")
    .load()
)
show(typed.selectExpr("count(*) AS orders", "round(sum(amount), 2) AS revenue"))

# COMMAND ----------

# MAGIC %md ## 3. Inspect lag: publish more, then ask the store and the query progress

# COMMAND ----------

with Store(store_path) as store:
    store.publish_many("orders", [{"order": i, "amount": 1.0} for i in range(1000, 1300)])
    for consumer in store.consumers("orders"):
        print(f"consumer {consumer.consumer}: next offset {consumer.next_offset}, "
              f"latest {consumer.latest}, lag {consumer.lag}")
progress = query.lastProgress["sources"][0]
print("last batch ended at", progress["endOffset"], "; source latest was", progress["latestOffset"])
assert spark.sql("SELECT count(*) FROM orders_raw").first()[0] == 1000
