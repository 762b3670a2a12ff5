# Databricks notebook source
# MAGIC %md
# MAGIC # Stream a topic into Delta Lake, stop, and restart exactly once
# MAGIC
# MAGIC The checkpoint holds the query's offsets, Delta's sink commits each micro-batch
# MAGIC once, and the store's dense offsets make a replayed batch read the same rows.
# MAGIC Locally this needs the `delta` extra (Spark downloads Delta's jars on first start).

# COMMAND ----------

import os
import tempfile

import spark_queue
from spark_queue.store import Store

try:
    spark  # noqa: B018 - Databricks (and a kernel with a session) defines it
except NameError:
    from spark_queue.connector.session import get_or_create

    spark = get_or_create("spark_queue to delta", delta=True)
spark_queue.register(spark)
show = globals().get("display") or (lambda df: df.show(truncate=False))

work_dir = os.environ.get("SPARK_QUEUE_NOTEBOOK_DIR") or tempfile.mkdtemp(prefix="sq-delta-")
store_path = os.path.join(work_dir, "sensors.sqlite")
table_path = os.path.join(work_dir, "delta", "readings")
checkpoint = os.path.join(work_dir, "checkpoints", "readings_to_delta")


def publish(start: int, count: int) -> None:
    with Store(store_path) as store:
        store.publish_many("readings", [{"sensor": i % 5, "celsius": 20 + i % 9}
                                        for i in range(start, start + count)])


def run_once() -> None:
    """One availableNow run: everything published so far, then stop."""
    stream = (
        spark.readStream.format("sqliteq")
        .schema("sensor INT, celsius DOUBLE")
        .option("path", store_path)
        .option("topic", "readings")
        .option("maxRowsPerTrigger", 2000)
        .load()
    )
    query = (
        stream.writeStream.format("delta")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(table_path)
    )
    query.awaitTermination()


# COMMAND ----------

# MAGIC %md ## First run

# COMMAND ----------

publish(0, 5000)
run_once()
print("rows in Delta after the first run:", spark.read.format("delta").load(table_path).count())

# COMMAND ----------

# MAGIC %md ## More events arrive; restart from the same checkpoint

# COMMAND ----------

publish(5000, 3000)
run_once()
delta = spark.read.format("delta").load(table_path)
show(delta.groupBy("sensor").count().orderBy("sensor"))
print("rows in Delta after the restart:", delta.count())
assert delta.count() == 8000
show(spark.sql(f"DESCRIBE HISTORY delta.`{table_path}`").select("version", "operation"))
