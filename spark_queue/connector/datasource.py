"""The ``sqliteq`` DataSource: the user manual, and the entry point Spark calls."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource

from spark_queue import FORMAT_NAME


class SqliteQueueDataSource(DataSource):
    """Read and write spark_queue store files from Spark: ``format("sqliteq")``.

    Reading
    -------
    (source manual: to be written with the source)

    Writing
    -------
    (sink manual: to be written with the sink)
    """

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME
