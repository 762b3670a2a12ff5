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

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
from pyspark.sql.datasource import SimpleDataSourceStreamReader
from pyspark.sql.types import StructType

from spark_queue.connector import compat
from spark_queue.connector.offset_json import SourceOffset
from spark_queue.connector.source.admission import Limits
from spark_queue.connector.source.batch_planner import SourcePlanner, read_bounds
from spark_queue.connector.source.offsets import Bounds, open_source_store, subscribed_bounds
from spark_queue.connector.source.partition_planner import planned_ranges
from spark_queue.connector.source.partition_reader import ranges_batches
from spark_queue.connector.source.read_shape import read_shape
from spark_queue.connector.source.source_options import SourceOptions
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
        self._store: Store | None = None
        self._seen: tuple[int, Bounds] | None = None  # (data_version, bounds) last read
        self._identity: str | None = None  # of the file self._store has open
        # The query's driver-side planning state (missing topics: one WARN each).
        self._planner = SourcePlanner(options, reports_latest=False)

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader to replay a batch in an executor: a connection
        # does not travel; the copy opens its own.
        state = self.__dict__.copy()
        state["_store"] = state["_seen"] = state["_identity"] = None
        return state

    def initialOffset(self) -> dict[str, Any]:
        return self._planner.initial().to_spark()

    def prepareForTriggerAvailableNow(self) -> None:
        self._planner.admission.prepare_available_now(read_bounds(self.options))

    def read(self, start: dict[str, Any]) -> tuple[Iterator[pa.RecordBatch], dict[str, Any]]:
        from spark_queue.store import keep_housekept

        keep_housekept(self.options.path)  # this planning process lives as long as the query
        begin = SourceOffset.from_spark(start)
        first = self._planner.planning(begin)
        try:
            bounds = self._bounds()
            assert self._identity is not None and self._store is not None, "_bounds() read it"
            plan = self._planner.next_batch(self._store, self._identity, bounds, begin,
                                            Limits.of(self.options), first)
            if not plan.runs:
                return iter(()), start
            self._planner.record(self._store, plan)  # durable before Spark logs it
            rows = self._batches(plan.planned, plan.end.positions, bounds, self._store)
            return iter(rows), plan.end.to_spark()
        except StoreError:
            self._drop_store()
            raise

    def readBetweenOffsets(
        self, start: dict[str, Any], end: dict[str, Any]
    ) -> Iterator[pa.RecordBatch]:
        begin = SourceOffset.from_spark(start)
        stop = SourceOffset.from_spark(end)
        store = open_source_store(self.options)
        try:
            with store.snapshot():
                bounds = subscribed_bounds(store, self.options)
                first, last = self._planner.checked_range(store, begin, stop, bounds)
                return iter(self._batches(first, last, bounds, store))
        finally:
            store.close()

    def commit(self, end: dict[str, Any]) -> None:
        self._planner.query.committed(SourceOffset.from_spark(end))

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
        self, start: dict[str, int], end: dict[str, int], bounds: Bounds,
        store: Store | None = None,
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

    def getCache(
        self, start: dict[str, Any], end: dict[str, Any]
    ) -> Iterator[pa.RecordBatch] | None:
        rows: Iterator[pa.RecordBatch] | None = super().getCache(start, end)
        if rows is None:
            # datasource.py wraps a SqliteQueueSimpleStreamReader, never another reader
            reader = cast(SqliteQueueSimpleStreamReader, self.simple_reader)
            return reader.readBetweenOffsets(start, end)
        return rows
