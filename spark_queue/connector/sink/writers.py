"""The sink's writers: tasks pack rows, the driver commits them exactly once.

Which process runs what (pyspark 4.2):

- ``write(iterator)`` runs in an executor's Python worker, once per task. It
  encodes the task's Arrow batches (:mod:`~spark_queue.connector.sink.encode`)
  into one Arrow IPC stream and returns it in a
  :class:`~spark_queue.connector.sink.commit_message.SqliteQueueCommitMessage`,
  with the streaming query id and batch id read from the task's local
  properties. It never opens the store.
- ``commit(messages[, batchId])`` runs on the driver, in a Python process
  started for that commit (no state survives between batches). It opens the
  store, writes every row of every message and the sink-ledger entry in ONE
  transaction (:func:`spark_queue.store.floor.sinks.commit_batch`), and closes it.
  A batch id already in the ledger for this sink is skipped; a streaming batch id
  past the ledger's next one is refused (the store went back in time under the
  query: a copy older than its checkpoint put back), writing nothing. Spark's
  batch ids never skip a sink: every batch it runs reaches ``commit``, one with
  no rows too (a write of no partitions still runs one task, which reports the
  query id), and a restart replays only batches at or below the ledger's.
- ``abort`` writes nothing: rows only ever reach the file in ``commit``.

Writers hold parsed options and the column layout only (both picklable), and for a
topic with a schema that schema as the driver read it when it built the writer: each task
checks its encoded values against it (``TopicSchema.all_fit``, the commit's own check), in
parallel, and marks its message when all fit, so the commit, one thread under the write
lock, checks only the rows of unmarked messages, or all of them if the topic's version
moved in between.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator
from itertools import repeat
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter

from spark_queue.checkpoint_repair import metadata_was_torn
from spark_queue.connector.compat import STREAM_ARROW_WRITER_BASES
from spark_queue.connector.sink.commit_message import SqliteQueueCommitMessage
from spark_queue.connector.sink.encode import encode_batch
from spark_queue.connector.sink.sink_options import SinkOptions
from spark_queue.connector.sink.sink_schema import JSON, SinkLayout
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import SparkQueueError, StoreNotCreatedError, StoreNotFoundError
from spark_queue.store import (
    BackupSource,
    CheckedAgainst,
    Encoded,
    EncodedChunk,
    NewJob,
    QueueRows,
    SinkCommit,
    SinkRows,
    Store,
    TopicRows,
    TopicSchema,
    current_in_file,
)

logger = logging.getLogger(__name__)

# Local properties Spark sets on every task of a micro-batch (MicroBatchExecution).
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"

# Commit messages cross the JVM twice on their way to the driver. LZ4 shrinks
# text-like rows (JSON) for less CPU than the copies it saves, but only costs
# on incompressible ones (random ids, binary): a sample of the first batch
# decides. The driver decompresses one batch at a time.
_LZ4 = (
    pa.ipc.IpcWriteOptions(compression="lz4") if pa.Codec.is_available("lz4_frame") else None
)
_PLAIN = pa.ipc.IpcWriteOptions()
_SAMPLE_ROWS = 4096
_MIN_SAVING = 0.2


def check_target(options: SinkOptions, layout: SinkLayout) -> TopicSchema | None:
    """Driver, as it builds a writer: ``path`` must name a store, or ``createStore`` be set
    (a typo'd path would otherwise become a new store, as the CLI's writes refuse without
    ``--create``); returns the schema of the sink's topic, which tasks check their rows
    against. Nothing is created, written or migrated here; the first commit creates the
    store. One opening of the file does both, as every micro-batch builds a writer."""
    path = options.path
    fix = ("set option createStore=true to create it (.option(\"createStore\", \"true\")), "
           "or fix the path; nothing was created.")
    if not os.path.exists(path):
        directory = os.path.dirname(os.path.abspath(path))
        if not options.create_store:
            raise StoreNotFoundError(
                f"{FORMAT_NAME} sink: 'path' names {path!r}, which is not a store (no such file "
                f"on this machine); {fix}"
            )
        if not os.path.isdir(directory):
            raise StoreNotFoundError(
                f"{FORMAT_NAME} sink: createStore=true makes the store file {path!r}, but its "
                f"directory {directory!r} does not exist; create the directory first."
            )
        return None
    try:
        # None for a queue or rows routed by a ``topic`` column (the commit checks them).
        if options.topic is not None and layout.route_column is None:
            return current_in_file(path, options.topic, busy_timeout_ms=options.busy_timeout_ms)
        with BackupSource(path, busy_timeout_ms=options.busy_timeout_ms):
            pass  # opened without writing: a store, of a version this reads
    except StoreNotCreatedError:
        if not options.create_store:
            raise StoreNotFoundError(
                f"{FORMAT_NAME} sink: 'path' names {path!r}, an empty file, not a store; {fix}"
            ) from None
    return None


class _SinkWriter:
    """What the batch and streaming writers share: task packing and the driver commit."""

    streaming = False

    def __init__(self, options: SinkOptions, layout: SinkLayout,
                 schema: TopicSchema | None = None) -> None:
        self.options = options
        self.layout = layout
        self.schema = schema  # the topic's, read on the driver (check_target)

    # -- executor --------------------------------------------------------
    def _pack(self, iterator: Iterator[pa.RecordBatch]) -> SqliteQueueCommitMessage:
        context = TaskContext.get()
        query_id = batch_id = None
        partition_id = 0
        if context is not None:
            partition_id = context.partitionId()
            if self.streaming:
                query_id = context.getLocalProperty(QUERY_ID_PROPERTY)
                raw_batch = context.getLocalProperty(BATCH_ID_PROPERTY)
                batch_id = None if raw_batch is None else int(raw_batch)
        rows = 0
        sink = writer = None
        fit = self.schema is not None
        for batch in iterator:
            if batch.num_rows == 0:
                continue
            # Whole-row JSON: the rows' dicts, which the check reads as given when it can.
            objects: list[Any] | None = [] if fit and self.layout.value_type == JSON else None
            encoded = encode_batch(batch, self.layout, objects)
            if fit:  # once a row fails, the commit checks the message (and words the error)
                assert self.schema is not None
                fit = self.schema.all_fit(encoded.column("value"), objects)
            if writer is None:
                sink = pa.BufferOutputStream()
                writer = pa.ipc.new_stream(sink, encoded.schema, options=_ipc_options(encoded))
            writer.write_batch(encoded)
            rows += batch.num_rows
        payload = None
        if writer is not None:
            writer.close()
            assert sink is not None, "opened with the writer"
            payload = sink.getvalue().to_pybytes()
        checked = self.schema.checked if fit and self.schema is not None else None
        return SqliteQueueCommitMessage(query_id, batch_id, partition_id, rows, payload, checked)

    # -- driver ----------------------------------------------------------
    def _commit(
        self,
        messages: list[SqliteQueueCommitMessage | None],
        sink_id: str | None,
        batch_id: int | None,
        by_query: bool = False,
    ) -> SinkCommit:
        # Spark's micro-batch ids never skip (see the module's docstring); batch ids a user
        # gives a batch write (foreachBatch) may.
        contiguous = self.streaming
        present = [m for m in messages if m is not None]
        started = time.monotonic()
        store = Store(
            self.options.path,
            create=self.options.create_store,
            durability=self.options.durability,
            busy_timeout_ms=self.options.busy_timeout_ms,
            replica_wait_ms=self.options.replica_wait_ms,
        )
        batches = _batches(present)
        try:
            if by_query:  # named by its query: go on under the entry of its checkpoint
                sink_id = self._checkpoint_sink(store, sink_id)
            result = store.commit_sink_batch(
                sink_id, batch_id, self._rows(batches), contiguous=contiguous)
        finally:
            store.close()
        logger.info(
            "%s sink %s batch %s: %s %d rows in %.3fs",
            FORMAT_NAME,
            sink_id,
            batch_id,
            "skipped, already committed;" if result.skipped else "wrote",
            sum(m.rows for m in present),
            time.monotonic() - started,
        )
        return result

    def _checkpoint_sink(self, store: Store, query_id: str | None) -> str | None:
        """The ledger entry of a sink named by its query id ``query_id``: the one the store
        recorded for its checkpoint when a repair removed the checkpoint's torn ``metadata``
        (the query came back under a new id), else ``query_id``
        (``tests/end_to_end/test_checkpoint_lost_id.py``)."""
        location = self.options.checkpoint_location
        if location is None or query_id is None:
            return query_id
        return store.sink_for_checkpoint(location, query_id,
                                         id_lost=metadata_was_torn(location))

    def _rows(self, batches: Iterator[tuple[CheckedAgainst | None, pa.RecordBatch]]
              ) -> SinkRows:
        # The one place the sink chooses queue or topic for its rows; the store writes what
        # it is given (spark_queue/store/floor/sinks.py).
        if self.options.queue is not None:
            return QueueRows(self.options.queue, _jobs((b for _, b in batches), self.layout))
        return TopicRows(self.options.topic, (_chunk(batch, self.layout.value_type, checked)
                                              for checked, batch in batches))


class SqliteQueueBatchWriter(_SinkWriter, DataSourceArrowWriter):
    """``df.write.format("sqliteq")``: the whole job lands in one transaction."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SqliteQueueCommitMessage:
        return self._pack(iterator)

    # Spark hands commit and abort the messages this writer's write() returned; pyspark types
    # them as the base WriterCommitMessage.
    def commit(self, messages: list[SqliteQueueCommitMessage | None]) -> None:  # type: ignore[override]
        self._commit(messages, self.options.sink_id, self.options.batch_id)

    def abort(self, messages: list[SqliteQueueCommitMessage | None]) -> None:  # type: ignore[override]
        logger.warning("%s sink: batch write aborted; nothing was written.", FORMAT_NAME)


# The bases depend on the pyspark version (compat.STREAM_ARROW_WRITER_BASES), which mypy cannot
# follow.
class SqliteQueueStreamWriter(_SinkWriter, *STREAM_ARROW_WRITER_BASES):  # type: ignore[misc]
    """``df.writeStream.format("sqliteq")``: each micro-batch exactly once, via the ledger."""

    streaming = True

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SqliteQueueCommitMessage:
        return self._pack(iterator)

    def commit(self, messages: list[SqliteQueueCommitMessage | None], batchId: int) -> None:
        present = [m for m in messages if m is not None]
        for message in present:
            if message.batch_id is not None and message.batch_id != batchId:
                raise SparkQueueError(
                    f"{FORMAT_NAME} sink: a task wrote micro-batch {message.batch_id} but Spark "
                    f"commits batch {batchId}; refusing to commit rows under the wrong id."
                )
        sink_id = self.options.sink_id
        if sink_id is None:
            query_ids = {m.query_id for m in present if m.query_id is not None}
            if len(query_ids) > 1:
                raise SparkQueueError(
                    f"{FORMAT_NAME} sink: tasks of batch {batchId} report different query ids "
                    f"{sorted(query_ids)}; set option 'sinkId' to name the sink."
                )
            if not query_ids:
                if any(m.rows for m in present):
                    raise SparkQueueError(
                        f"{FORMAT_NAME} sink: the tasks of batch {batchId} did not see Spark's "
                        f"'{QUERY_ID_PROPERTY}' property; set option 'sinkId' to name the sink."
                    )
                return  # no task, no rows: nothing to write and no id to record it under
            sink_id = query_ids.pop()
            self._commit(messages, sink_id, batchId, by_query=True)
            return
        self._commit(messages, sink_id, batchId)

    def abort(self, messages: list[SqliteQueueCommitMessage | None], batchId: int) -> None:
        logger.warning(
            "%s sink: micro-batch %d aborted; nothing was written.", FORMAT_NAME, batchId
        )


def _ipc_options(batch: pa.RecordBatch) -> pa.ipc.IpcWriteOptions:
    """LZ4 if a sample of ``batch`` shrinks by at least ``_MIN_SAVING``, else uncompressed."""
    if _LZ4 is None:
        return _PLAIN
    sample = batch.slice(0, _SAMPLE_ROWS).serialize()
    packed = pa.compress(sample, codec="lz4", asbytes=False)
    return _LZ4 if packed.size <= (1 - _MIN_SAVING) * sample.size else _PLAIN


def _batches(messages: list[SqliteQueueCommitMessage]
             ) -> Iterator[tuple[CheckedAgainst | None, pa.RecordBatch]]:
    """Every encoded batch of every message with its message's schema mark, read zero-copy;
    each message is dropped once read."""
    for message in messages:
        payload, message.arrow_ipc = message.arrow_ipc, None
        if payload:
            yield from zip(repeat(message.checked), pa.ipc.open_stream(pa.py_buffer(payload)))
        del payload


def _chunk(batch: pa.RecordBatch, value_type: int,
           checked: CheckedAgainst | None = None) -> EncodedChunk:
    names = batch.schema.names
    return EncodedChunk(
        values=batch.column("value").to_pylist(),
        value_type=value_type,
        keys=batch.column("key").to_pylist() if "key" in names else None,
        headers=batch.column("headers").to_pylist() if "headers" in names else None,
        topics=batch.column("topic").to_pylist() if "topic" in names else None,
        checked=checked,
    )


def _jobs(batches: Iterator[pa.RecordBatch], layout: SinkLayout) -> Iterator[NewJob]:
    # enqueue_rows stores a str payload as text: JSON rows, already JSON text
    # from the executors, go in as Encoded (stored as is with value_type 2,
    # which workers decode), not parsed here to be encoded again.
    as_json = layout.value_type == JSON
    for batch in batches:
        n = batch.num_rows
        names = batch.schema.names
        values = batch.column("value").to_pylist()
        if as_json:
            values = [None if v is None else Encoded(v, JSON) for v in values]

        def column(name: str, default: object = None, n: int = n, names: list[str] = names,
                   batch: pa.RecordBatch = batch) -> Iterable[Any]:
            return batch.column(name).to_pylist() if name in names else repeat(default, n)

        for payload, priority, delay_ms, key, max_attempts, ttl_ms in zip(
            values,
            column("priority"),
            column("delay_ms"),
            column("idempotency_key"),
            column("max_attempts"),
            column("ttl_ms"),
            strict=True,
        ):
            yield NewJob(
                payload,
                0 if priority is None else priority,
                0 if delay_ms is None else delay_ms,
                key,
                max_attempts,
                ttl_ms,
            )
