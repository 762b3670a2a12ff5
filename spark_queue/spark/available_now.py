"""Drain a backlog in bounded micro-batches with ``Trigger.AvailableNow``, on every Spark version.

pyspark 4.2+ gives Python sources admission control: one ``availableNow`` run
reads the whole backlog in batches of at most ``maxRowsPerTrigger`` rows.
Spark 4.0 and 4.1 wrap a Python source for such a run and fix its end at the
source's first ``latestOffset()``, which the ``sqliteq`` source caps at
``maxRowsPerTrigger`` rows: a run reads ONE bounded batch and stops. Here the
query is started again from its checkpoint until a run finds less than a
full batch, so the whole backlog arrives in bounded batches, each committed
exactly once by Spark's checkpoint like any other micro-batch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from spark_queue.connector import compat
from spark_queue.errors import OptionError
from spark_queue.spark import python_env
from spark_queue.spark.query_progress import input_rows
from spark_queue.spark.torn_checkpoint import raise_if_torn, writer_checkpoint

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AvailableNowRun:
    """What :func:`run_available_now` did: Spark queries started, the rows of each micro-batch
    that read any (in order), and the last query (its ``lastProgress``, ``recentProgress``)."""

    runs: int
    batches: tuple[int, ...]
    query: StreamingQuery

    @property
    def rows(self) -> int:
        return sum(self.batches)


def run_available_now(
    writer: DataStreamWriter,
    path: str | None = None,
    *,
    table: str | None = None,
    max_runs: int | None = None,
) -> AvailableNowRun:
    """Run ``writer``'s query with ``Trigger.AvailableNow`` until it has read the backlog it
    found, in micro-batches no larger than the source's ``maxRowsPerTrigger``; return when done.

    The one-line replacement for ``writer.trigger(availableNow=True).start(path)`` followed by
    ``awaitTermination()`` (or ``.toTable(table)`` with ``table``). On pyspark 4.2+ that is
    exactly what it does. On 4.0 and 4.1, where Spark reads one bounded batch per
    ``availableNow`` run of a Python source, it starts the query again from its checkpoint
    (each start costs what any query start costs) until a run reads less than the largest
    batch seen so far, which means the source has reached the end of the stream as it was
    then: everything published before the call, and anything published since that a run
    met. ``max_runs`` bounds the number of starts, for a producer that outpaces the drain.

    The writer must have a ``checkpointLocation`` (Spark's checkpoint is what makes each
    run resume where the last one stopped, exactly once). A run that fails because a power
    cut tore that checkpoint raises :class:`~spark_queue.errors.CheckpointTornError` (from
    Spark's error), naming the torn files and ``sqliteq checkpoint repair PATH``; any other
    failure raises Spark's error as it is. An interrupt (Ctrl-C) stops the running query first.
    Before its first start it settles the ``sqliteq`` source's shared Python environment in
    the JVM, as :func:`spark_queue.register` does, so drains started together from several
    threads do not fail in Spark's task serialization.
    """
    if max_runs is not None and max_runs < 1:
        raise OptionError(
            f"run_available_now: max_runs must be a positive integer or None; got {max_runs!r}."
        )
    # Before the first start: two drains started together must not meet Spark's one
    # resize of the source's shared environment map (spark/python_env.py).
    python_env.settle_source_env(getattr(writer, "_spark", None))
    writer = writer.trigger(availableNow=True)
    batches: list[int] = []
    largest = runs = 0
    while True:
        try:
            query = writer.toTable(table) if table is not None else writer.start(path)
        except Exception as exc:  # a torn metadata fails here
            raise_if_torn(exc, writer_checkpoint(writer))
            raise
        runs += 1
        try:
            query.awaitTermination()
        except BaseException as exc:
            if query.isActive:
                query.stop()
            if isinstance(exc, Exception):  # a torn offsets/ or commits/ fails here
                raise_if_torn(exc, writer_checkpoint(writer))
            raise
        read = [input_rows(progress) for progress in query.recentProgress]
        batches.extend(rows for rows in read if rows)
        admitted = sum(read)
        log.info("availableNow run %d read %d rows (%d in all)", runs, admitted, sum(batches))
        # pyspark 4.2+ bounds the batches of one run itself (compat.HAS_ADMISSION_CONTROL).
        if compat.HAS_ADMISSION_CONTROL or admitted == 0 or admitted < largest:
            break
        largest = admitted
        if max_runs is not None and runs >= max_runs:
            break
    return AvailableNowRun(runs=runs, batches=tuple(batches), query=query)
