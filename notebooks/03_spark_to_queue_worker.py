# Databricks notebook source
# MAGIC %md
# MAGIC # Spark -> queue -> worker
# MAGIC
# MAGIC A Spark job enqueues one job per row into a work queue in the store file; a
# MAGIC worker outside Spark claims, processes and acknowledges them. In production
# MAGIC the worker runs as its own process:
# MAGIC `sqliteq worker STORE mymodule:handle --queue invoices --concurrency 4`.

# COMMAND ----------

import os
import tempfile

import spark_queue
from spark_queue.store import Store
from spark_queue.worker import Worker

try:
    spark  # noqa: B018 - Databricks (and a kernel with a session) defines it
except NameError:
    from spark_queue.connector.session import get_or_create

    spark = get_or_create("spark_queue to a queue", delta=False)
spark_queue.register(spark)
show = globals().get("display") or (lambda df: df.show(truncate=False))

work_dir = os.environ.get("SPARK_QUEUE_NOTEBOOK_DIR") or tempfile.mkdtemp(prefix="sq-queue-")
store_path = os.path.join(work_dir, "work.sqlite")

# COMMAND ----------

# MAGIC %md ## Enqueue from Spark (one transaction for the whole job)

# COMMAND ----------

invoices = spark.range(500).selectExpr(
    "id AS invoice",
    "CAST(id % 3 AS INT) AS priority",          # higher first
    "concat('invoice-', id) AS idempotency_key",  # enqueueing twice keeps one job
    "round(rand(7) * 100, 2) AS amount",
)
invoices.write.format("sqliteq").mode("append").option("queue", "invoices").save(store_path)
invoices.write.format("sqliteq").mode("append").option("queue", "invoices").save(store_path)

with Store(store_path) as store:
    for stats in store.queue_stats():
        print(stats)

# COMMAND ----------

# MAGIC %md ## Process the jobs with a worker (here in-process, until the queue is empty)

# COMMAND ----------

processed = []


def handle(job):
    processed.append(job.payload["invoice"])


stats = Worker(store_path, "invoices", handle, concurrency=2, batch_size=32,
               until_empty=True).run()
print(f"acked {stats.acked}, retried {stats.retried}, dead-lettered {stats.dead_lettered}")
assert sorted(processed) == list(range(500))
with Store(store_path) as store:
    print(store.queue_stats())
