"""Entry point for Spark's automatic data source lookup (format "sqliteq").

Spark imports every top-level ``pyspark_*`` module it finds, in ONE try
block, and registers each module's ``DefaultSource``: an exception here would
hide every other Python data source in the environment too. So this module
never raises: if the connector cannot be imported (a pyspark outside 4.0-4.3,
a broken install) it logs why and exposes no ``DefaultSource``, and
``format("sqliteq")`` then fails with Spark's own "not found" error while
other sources keep working. ``spark_queue.register(spark)`` raises the real
error instead.
"""

import logging

try:
    from spark_queue.connector import SqliteQueueDataSource as DefaultSource

    __all__ = ["DefaultSource"]
except Exception as exc:  # noqa: BLE001 - see the module docstring
    logging.getLogger("spark_queue.connector").warning(
        "format('sqliteq') is unavailable: importing spark_queue.connector failed (%s: %s); "
        "spark_queue.register(spark) shows the full error.",
        type(exc).__name__, exc,
    )
    __all__ = []
