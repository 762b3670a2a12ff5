"""Entry point for Spark's automatic data source lookup (format "sqliteq").

Spark imports every top-level ``pyspark_*`` module it finds and registers its
``DefaultSource``; this module stays tiny so that scan is cheap and safe.
"""

from spark_queue.connector import SqliteQueueDataSource as DefaultSource

__all__ = ["DefaultSource"]
