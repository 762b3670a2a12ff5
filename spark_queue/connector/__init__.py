"""The Spark connector, format ``sqliteq``: the only package that imports pyspark."""

from spark_queue.connector.datasource import SqliteQueueDataSource

__all__ = ["SqliteQueueDataSource"]
