"""The low-latency stream reader (``latencyMode=low``): rows travel with the plan, no read task.

Spark uses it when ``streamReader()`` raises ``PySparkNotImplementedError``
and ``simpleStreamReader()`` exists (pyspark 4.0+). Which process runs what:

- ``initialOffset``, ``read(start)`` and ``commit`` run in the query's one
  long-lived driver-side Python process. ``read`` plans the batch (the same
  :class:`~spark_queue.connector.source.admission.TriggerAdmission` as the default reader:
  exact ``maxRowsPerTrigger``, ``minRowsPerTrigger`` with ``maxTriggerDelay``,
  the AvailableNow target) AND reads its rows, which Spark keeps and ships to
  the batch through the block manager: no executor Python worker starts per
  micro-batch, which is where the default path spends most of its latency.
- ``readBetweenOffsets(start, end)`` replays a batch Spark planned before a
  restart. pyspark would run it in an executor task, which cannot open the
  file on a cluster; :class:`SqliteQueueLowLatencyStreamReader` reads it in
  the same driver-side process instead, so executors never open the file in
  this mode.

Spark calls ``read`` back to back (``spark.sql.streaming.pollingDelay``
apart, 10 ms by default) while no data arrives, so the reader keeps one
connection for the query's run and re-reads the topics' bounds only when
``PRAGMA data_version`` says another connection committed: an idle poll costs
one pragma instead of opening the file (about 0.6 ms). A store error drops the
connection; the next call opens a fresh one.

Spark copies the iterator ``read`` returns (to serve a batch planned twice),
so it is an iterator over a list, never a generator. Every row passes through
this one Python process: bulk throughput is far below the default reader's.
Spark asks a simple reader for no latest offset, so progress reports show no
lag in this mode.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import SimpleDataSourceStreamReader
from pyspark.sql.types import StructType

from spark_queue.connector import compat
from spark_queue.connector.source.admission import Limits, TriggerAdmission
from spark_queue.connector.source.batch_plans import record_plan
from spark_queue.connector.source.lineage import HistoryGuard
from spark_queue.connector.source.offsets import (
    Bounds,
    MissingTopics,
    checkpoint_offsets,
    open_source_store,
    subscribed_bounds,
)
from spark_queue.connector.source.partition_planner import planned_ranges
from spark_queue.connector.source.partition_reader import ranges_batches
from spark_queue.connector.source.query_position import QueryPosition
from spark_queue.connector.source.read_shape import read_shape
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.connector.source.stream_reader import (
    initial_offsets,
    next_offsets,
    read_store,
)
from spark_queue.connector.source.topic_columns import check_unchanged
from spark_queue.errors import StoreError

if TYPE_CHECKING:
    from spark_queue.store import Store


class SqliteQueueSimpleStreamReader(
    SimpleDataSourceStreamReader, compat.SupportsTriggerAvailableNow
):
    """Plans and reads each micro-batch in the driver's planning process."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self._shape = read_shape(options, schema)  # once per query: every batch is read here
        self._admission = TriggerAdmission(options, time.monotonic)
        self._store: Store | None = None
        self._seen: tuple[int, Bounds] | None = None  # (data_version, bounds) last read
        self._identity: str | None = None  # of the file self._store has open
        self._missing = MissingTopics(reports_latest=False)  # not created yet: one WARN each
        self._history = HistoryGuard(options)  # offsets Spark hands back, checked once
        self._query = QueryPosition(options)  # this query's own position under ``consumer``

    def __getstate__(self) -> dict:
        # Spark pickles the reader to replay a batch in an executor: a connection
        # does not travel; the copy opens its own.
        state = self.__dict__.copy()
        state["_store"] = state["_seen"] = state["_identity"] = None
        return state

    def initialOffset(self) -> dict:
        return self._query.started(
            initial_offsets(self.options, self._history, self._query.starting()))

    def prepareForTriggerAvailableNow(self) -> None:
        self._admission.prepare_available_now(read_store(self.options)[1])

    def read(self, start: dict) -> tuple[Iterator[pa.RecordBatch], dict]:
        from spark_queue.store import keep_housekept

        keep_housekept(self.options.path)  # this planning process lives as long as the query
        self._query.planning(start)
        try:
            bounds = self._bounds()
            self._missing.note(self.options, bounds, self._store)
            assert self._identity is not None and self._store is not None, "_bounds() read it"
            if self.options.value_schema_versions:  # valueSchema=topic
                check_unchanged(self._store, self.options)
            first = self._query.first_batch(start)
            end = next_offsets(
                self._admission, self._history, self._store, start, self._identity, bounds,
                Limits.of(self.options), self._query.reader, first,
            )
            if end is start:
                return iter(()), start
            # durable before Spark logs it
            record_plan(self._store, self.options, start, end, first)
            planned = self._history.plan_from(self._store, self._identity, start, bounds)
            rows = self._batches(planned, checkpoint_offsets(end), bounds, self._store)
            return iter(rows), end
        except StoreError:
            self._drop_store()
            raise

    def readBetweenOffsets(self, start: dict, end: dict) -> Iterator[pa.RecordBatch]:
        from spark_queue.store import store_id

        store = open_source_store(self.options)
        try:
            with store.snapshot():
                identity, bounds = store_id(store), subscribed_bounds(store, self.options)
                begin, stop = (self._history.plan_from(store, identity, offsets, bounds)
                               for offsets in (start, end))
                return iter(self._batches(begin, stop, bounds, store))
        finally:
            store.close()

    def commit(self, end: dict) -> None:
        self._query.committed(end)

    def _bounds(self) -> Bounds:
        if self._store is None:
            from spark_queue.store import store_id

            self._store = open_source_store(self.options)
            # One file per connection: the identity cannot change while it is open.
            self._identity = store_id(self._store)
        version = self._store.data_version()
        if self._seen is None or self._seen[0] != version:
            self._seen = (version, subscribed_bounds(self._store, self.options))
        return self._seen[1]

    def _drop_store(self) -> None:
        store, self._store, self._seen, self._identity = self._store, None, None, None
        if store is not None:
            store.close()

    def _batches(
        self, start: dict, end: dict, bounds: Bounds, store: Store | None = None
    ) -> list[pa.RecordBatch]:
        ranges = planned_ranges(self.options, start, end, bounds)
        return list(ranges_batches(self.options, self.schema, self._shape, ranges, store))


class SqliteQueueLowLatencyStreamReader(compat.PlanShippingStreamReader):
    """pyspark's own wrapper of a simple reader (``_SimpleStreamReaderWrapper``), except
    that a batch replayed after a restart ships with its plan too.

    The wrapper keeps the rows ``read`` returned for the batches it planned; a batch
    planned by an earlier run of the query (replayed from the checkpoint) is not
    among them, and the wrapper would leave it to an executor task. Here the driver
    reads it (``readBetweenOffsets``) and Spark ships it like any other batch.
    """

    def getCache(self, start: dict, end: dict) -> Iterator[pa.RecordBatch] | None:
        rows = super().getCache(start, end)
        if rows is None:
            return self.simple_reader.readBetweenOffsets(start, end)
        return rows
