"""spark_queue: a durable stream-and-queue store in one SQLite file, with a Spark connector.

``import spark_queue`` loads no pyspark; :func:`register` imports the
connector only when called.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

FORMAT_NAME = "sqliteq"


def register(spark: Any) -> None:
    """Register the ``sqliteq`` data source with ``spark`` (needed where auto-discovery is off)."""
    from spark_queue.connector import SqliteQueueDataSource

    spark.dataSource.register(SqliteQueueDataSource)
