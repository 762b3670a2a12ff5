"""spark_queue: a durable stream-and-queue store in one SQLite file, with a Spark connector.

``import spark_queue`` loads no pyspark; :func:`register` imports the
connector only when called.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

FORMAT_NAME = "sqliteq"


def register(spark: Any) -> None:
    """Register the ``sqliteq`` data source with ``spark`` (needed where auto-discovery is off).

    Safe to call where Spark already discovered the format through the
    installed ``pyspark_sqliteq`` module (pyspark 4.0 refuses to register a
    discovered name again; that refusal is the outcome asked for). Raises the
    import error when the connector cannot load on this pyspark.
    """
    from spark_queue.connector import SqliteQueueDataSource

    try:
        spark.dataSource.register(SqliteQueueDataSource)
    except Exception as exc:
        if not _already_registered(exc):
            raise


def _already_registered(exc: Exception) -> bool:
    # pyspark 4.0: DATA_SOURCE_ALREADY_EXISTS for a name its lookup found.
    return "DATA_SOURCE_ALREADY_EXISTS" in str(exc) or "already exists" in str(exc).lower()
