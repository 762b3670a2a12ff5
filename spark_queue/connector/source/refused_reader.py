"""The stream reader of a stream whose options were refused: it raises their error on
Spark's first call.

Spark calls ``schema()`` alike for ``spark.read`` and ``spark.readStream`` (the same
options, nothing saying which), so a batch-only option such as ``endingOffsets`` can be
refused for a stream only when the query starts, in ``streamReader``. Raised there,
pyspark's source runner (4.0-4.3) calls ``stop()`` on a reader it never got and adds an
``UnboundLocalError`` of its own to the report; handed this reader instead, it reports
the option error alone, before any task runs
(``tests/end_to_end/test_source_stream.py::test_bad_option_fails_the_stream_at_load``).
"""

from __future__ import annotations

from typing import Any, NoReturn

from pyspark.sql.datasource import DataSourceStreamReader

from spark_queue.errors import SparkQueueError


class SqliteQueueRefusedStreamReader(DataSourceStreamReader):
    """Raises ``error`` from every call Spark makes before reading; ``stop()`` succeeds."""

    def __init__(self, error: SparkQueueError) -> None:
        self.error = error

    def _refuse(self) -> NoReturn:
        # Its own frame only: the option parser's frames would bury the message.
        raise self.error.with_traceback(None) from None

    def initialOffset(self) -> NoReturn:
        self._refuse()

    def latestOffset(self, start: dict[str, Any] | None = None, limit: object = None) -> NoReturn:
        self._refuse()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> NoReturn:
        self._refuse()

    def read(self, partition: object) -> NoReturn:
        self._refuse()

    def commit(self, end: dict[str, Any]) -> NoReturn:
        self._refuse()

    def stop(self) -> None:
        pass
