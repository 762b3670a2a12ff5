"""The demo's two streaming queries.

1. bronze: topic -> Delta table, every event exactly once (Delta's streaming
   sink is idempotent per batch; the checkpoint holds the offsets). Parquet
   where the session has no Delta (Spark's file sink is exactly once too).
2. alerts: topic -> per-device windowed average -> jobs in a queue, through
   ``format("sqliteq")`` with an idempotency key per device and window.

Neither repeats the readings' schema: the topic declares it (run.py sets
``sensor_producer.READING_SCHEMA``). Alerts reads the declared columns
(``valueSchema=topic``); bronze keeps Kafka's columns beside them, parsing the value with
the topic's DDL as read from the store.

Everything lives in the demo's directory on this machine, and Spark is given each path as
a ``file:`` URI (:func:`spark_queue.spark.driver_uri`), so a default file system of another
kind (DBFS on Databricks) changes nothing: the checkpoints stay beside the store. The
alerts query is stateful (a windowed aggregation): executors write its state into its
checkpoint, which works here because they run on this machine (a local master). On a
cluster of several nodes such a query reads a table the stateless bronze query wrote
instead, with its checkpoint on shared storage (docs/cluster.md#checkpoints).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from spark_queue.demo.config import DemoConfig
from spark_queue.errors import StoreError
from spark_queue.spark.notebooks import driver_uri
from spark_queue.store import Store


def _source(spark: SparkSession, config: DemoConfig, consumer: str,
            value_schema: str = "kafka") -> DataFrame:
    return (
        spark.readStream.format("sqliteq")
        .option("path", driver_uri(config.store_path))
        .option("topic", config.topic)
        .option("consumer", consumer)
        .option("maxRowsPerTrigger", config.max_rows_per_trigger)
        .option("valueFormat", "string")
        .option("keyFormat", "string")
        .option("valueSchema", value_schema)
        .load()
    )


def declared_schema(config: DemoConfig) -> str:
    """The DDL the demo's topic declares (run.py sets it before the queries start)."""
    with Store(config.store_path) as store:
        schema = store.topic(config.topic).schema()
    if schema is None:
        raise StoreError(f"demo topic {config.topic!r} of {config.store_path} declares no "
                          "schema; the demo sets it at start (sqliteq demo).")
    return schema.ddl


def start_bronze(spark: SparkSession, config: DemoConfig, table_format: str) -> StreamingQuery:
    reading = F.from_json("value", declared_schema(config))
    bronze = _source(spark, config, "demo-bronze").select(
        "topic", "offset", "timestamp", "key", "value",
        reading["device"].alias("device"), reading["celsius"].alias("celsius"),
    )
    return (
        bronze.writeStream.format(table_format)
        .queryName("bronze")
        .option("checkpointLocation", driver_uri(config.bronze_checkpoint(table_format)))
        .trigger(processingTime=f"{config.trigger_seconds} seconds")
        .start(driver_uri(config.bronze_path(table_format)))
    )


def start_alerts(spark: SparkSession, config: DemoConfig) -> StreamingQuery:
    readings = (
        _source(spark, config, "demo-alerts", value_schema="topic")
        .withColumn("event_time", F.timestamp_millis("ts_ms"))
        .withWatermark("event_time", "1 second")
    )
    hot = (
        readings.groupBy(F.window("event_time", f"{config.window_seconds} seconds"), "device")
        .agg(F.avg("celsius").alias("avg_celsius"), F.count("*").alias("readings"))
        .where(F.col("avg_celsius") > config.threshold_celsius)
    )
    jobs = hot.select(
        F.concat_ws("@", "device", F.col("window.start").cast("string")).alias("idempotency_key"),
        F.col("avg_celsius").cast("int").alias("priority"),
        "device",
        F.col("window.start").alias("window_start"),
        F.round("avg_celsius", 2).alias("avg_celsius"),
        "readings",
    )
    return (
        jobs.writeStream.format("sqliteq")
        .queryName("alerts")
        .outputMode("append")
        .option("path", driver_uri(config.store_path))
        .option("queue", config.queue)
        # With a replica, a batch commits only once the replica holds it: a restored store's
        # ledger is then never behind the alerts' checkpoint (docs/replication.md).
        .option("durability", "replicated" if config.replica_url else "normal")
        .option("checkpointLocation", driver_uri(config.checkpoint("alerts")))
        .trigger(processingTime=f"{config.trigger_seconds} seconds")
        .start()
    )

