# Databricks notebook source
# MAGIC %md
# MAGIC # Spark -> queue -> worker
# MAGIC
# MAGIC A Spark job enqueues one job per row into a work queue in the store file; a
# MAGIC worker outside Spark claims, processes and acknowledges them. In production
# MAGIC the worker runs as its own process:
# MAGIC `sqliteq worker STORE mymodule:handle --queue invoices --concurrency 4`.
# MAGIC
# MAGIC The `work_dir` widget (default `/local_disk0/spark_queue/queue_worker` on Databricks,
# MAGIC `./spark_queue_notebooks/queue_worker` elsewhere) holds the store; keep it on the
# MAGIC driver's local disk (notebook 01 says why) and give it to Spark as a `file:` URI. The
# MAGIC sink creates the store when asked (`createStore`); without it a path that is not a
# MAGIC store (a typo) fails. Run it again: the queue remembers each invoice's idempotency key
# MAGIC (for the queue's `idempotency_window_ms`), so nothing is enqueued or processed twice.
# MAGIC The driver's disk is gone when the cluster terminates: to keep the queue, set the
# MAGIC `replica_url` widget (`s3://...` or `file:///Volumes/...`): the notebook then restores a
# MAGIC missing store from it and replicates it while it runs (docs/replication.md); a job
# MAGIC acknowledged in the last second before a loss may run again (at least once).

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

from spark_queue import Store, Worker, register
from spark_queue.spark import driver_uri, replicate_store, work_dir

try:
    spark  # noqa: B018 - Databricks (and a kernel with a session) defines it
except NameError:
    from spark_queue.spark import get_or_create

    spark = get_or_create("spark_queue to a queue", delta=False)
register(spark)
show = globals().get("display") or (lambda df: df.show(truncate=False))

store_path = os.path.join(work_dir("queue_worker", globals().get("dbutils")), "work.sqlite")
# A replica URL set (the replica_url widget, $SPARK_QUEUE_REPLICA_URL): restore the store if
# the driver's disk lost it, and replicate it while this runs (docs/replication.md).
replicating = replicate_store(store_path, globals().get("dbutils"))
print(f"store {store_path}" + (f", replicated to {replicating.url}" if replicating else ""))

# COMMAND ----------

# MAGIC %md ## Enqueue from Spark (one transaction for the whole job)

# COMMAND ----------

invoices = spark.range(500).selectExpr(
    "id AS invoice",
    "CAST(id % 3 AS INT) AS priority",          # higher first
    "concat('invoice-', id) AS idempotency_key",  # enqueueing twice keeps one job
    "round(rand(7) * 100, 2) AS amount",
)
show(invoices.limit(5))
for _ in range(2):  # the second write enqueues nothing: every key was seen
    (invoices.write.format("sqliteq").mode("append").option("queue", "invoices")
     .option("createStore", "true").save(driver_uri(store_path)))

with Store(store_path) as store:
    ready = {s.queue: s.ready for s in store.queue_stats()}["invoices"]
print(f"invoices ready: {ready} (0 on a rerun: every key was seen before)")

# COMMAND ----------

# MAGIC %md ## Process the jobs with a worker (here in-process, until the queue is empty)

# COMMAND ----------

processed = []


def handle(job):
    processed.append(job.payload["invoice"])


stats = Worker(store_path, "invoices", handle, concurrency=2, batch_size=32,
               until_empty=True).run()
print(f"acked {stats.acked}, retried {stats.retried}, dead-lettered {stats.dead_lettered}")
assert len(processed) == len(set(processed)) == ready  # each invoice once
assert set(processed) <= set(range(500))
with Store(store_path) as store:
    print(store.queue_stats())
