"""The message a sink task sends to the driver's commit: its rows, encoded, as Arrow IPC."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import WriterCommitMessage

from spark_queue.store import CheckedAgainst


@dataclass
class SqliteQueueCommitMessage(WriterCommitMessage):
    """One task's output, carried to ``commit()`` on the driver (picklable).

    ``arrow_ipc`` is an Arrow IPC stream of the task's rows already in the
    store's encoded form (see :mod:`spark_queue.connector.sink.encode`), or
    None when the task had no rows. ``query_id`` and ``batch_id`` come from
    the task's local properties (``sql.streaming.queryId``,
    ``streaming.sql.batchId``); both are None in a batch write. The driver
    drops ``arrow_ipc`` once it has written the rows, so only one copy of a
    micro-batch lives in driver memory. ``checked`` names the topic's schema
    version every row was checked against in the task (all fitting), or is
    None: the commit checks the rows then.
    """

    query_id: str | None
    batch_id: int | None
    partition_id: int
    rows: int
    arrow_ipc: bytes | None
    checked: CheckedAgainst | None = None
