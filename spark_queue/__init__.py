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

    Does nothing where Spark already has the format (its lookup found the installed
    ``pyspark_sqliteq`` module, or an earlier call registered it), so it logs no
    "replaced a statically registered data source" warning. Raises the import error
    when the connector cannot load on this pyspark.
    """
    from spark_queue.connector import SqliteQueueDataSource, compat

    if compat.data_source_exists(spark, FORMAT_NAME):
        return
    try:
        spark.dataSource.register(SqliteQueueDataSource)
    except Exception as exc:
        if not _already_registered(exc):
            raise


def _already_registered(exc: Exception) -> bool:
    # pyspark 4.0: DATA_SOURCE_ALREADY_EXISTS for a name its lookup found (a Spark
    # Connect session, where the lookup cannot be asked first).
    return "DATA_SOURCE_ALREADY_EXISTS" in str(exc) or "already exists" in str(exc).lower()
