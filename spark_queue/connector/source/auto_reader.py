"""The default stream reader (``latencyMode=auto``): small micro-batches travel with the plan.

A micro-batch's cost on the executor path is mostly fixed: a task in an
executor Python worker costs ~60 ms more than a task that reads rows Spark
already holds (BENCHMARKS.md, "Latency"). So when a batch holds at most
``lowLatencyMaxRows`` rows (and :data:`SHIPPED_MAX_BYTES` once read), the
driver's planning process reads it in ``partitions`` and hands it to Spark in
``getCache``: Spark keeps the rows in the driver's block manager and the batch's
one task reads them there, as ``latencyMode=low`` does. A larger batch is split
into partitions that executors read, as ``latencyMode=throughput`` does. The
choice depends only on the range, so a batch replayed after a restart takes the
same path and reads the same rows (offsets are dense and immutable).

Which process runs what: everything but ``read`` runs in the query's one
long-lived driver-side Python process, as for :mod:`stream_reader`; ``read``
runs in executors for the large batches (and, on a pyspark that ships no rows,
for the small ones: their one partition then reads itself).

Spark ships rows with the plan only for its private simple-reader wrapper
class (:data:`spark_queue.connector.compat.PlanShippingStreamReader`), so this
reader subclasses it and overrides all of its behaviour, and asks
:func:`compat.report_latest_offset_of` to keep lag reporting on 4.2+.
Shipped rows stay in driver memory until the batch is planned and then in the
driver's block manager: at most ``lowLatencyMaxRows`` rows and
:data:`SHIPPED_MAX_BYTES` per batch; larger batches never pass through the
driver.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from spark_queue.connector import compat
from spark_queue.connector.offset_json import SourceOffset
from spark_queue.connector.source.offsets import open_source_store, subscribed_bounds
from spark_queue.connector.source.partition_planner import plan_range_partitions, planned_ranges
from spark_queue.connector.source.partition_reader import ranges_batches
from spark_queue.connector.source.partitions import RangesPartition
from spark_queue.connector.source.read_shape import file_identity, read_shape
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.connector.source.stream_reader import SqliteQueueStreamReader

if TYPE_CHECKING:
    from spark_queue.store import Store

#: A batch whose rows take more Arrow memory than this once read is left to executors.
SHIPPED_MAX_BYTES = 16 * 1024 * 1024
#: Rows read per step while shipping, so the bytes limit is checked before much more
#: than it is held.
SHIP_CHUNK_ROWS = 1_000


class SqliteQueueAutoStreamReader(SqliteQueueStreamReader, compat.PlanShippingStreamReader):
    """Plans like the executor reader; ships a small batch's rows with its plan."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        super().__init__(options, schema)
        self._shape = read_shape(options, schema)  # once per query: batches shipped here
        # pyspark 4.2+ asks a wrapper's ``simple_reader`` whether it supports
        # Trigger.AvailableNow and calls its prepareForTriggerAvailableNow.
        self.simple_reader = self  # type: ignore[assignment]  # the wrapper's own slot
        # (start, end, batches) read by the last partitions() call, for getCache().
        self._shipped: tuple[dict[str, Any], dict[str, Any], list[pa.RecordBatch]] | None = None
        compat.report_latest_offset_of(SqliteQueueAutoStreamReader)

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader for executors: rows read for one batch do not travel.
        state = self.__dict__.copy()
        state["_shipped"] = None
        return state

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = SourceOffset.from_spark(start)
        stop = SourceOffset.from_spark(end)
        self._position = stop
        self._planner.query.planned(begin, stop)
        self._shipped = None
        given = (start, end)  # getCache is asked with Spark's offsets, the identity in them
        store = open_source_store(self.options)
        try:
            with store.snapshot():
                bounds = subscribed_bounds(store, self.options)
                first, last = self._planner.checked_range(store, begin, stop, bounds)
                ranges = planned_ranges(self.options, first, last, bounds)
                rows = sum(stop - begin for begin, stop in ranges.values())
                if 0 < rows <= self.options.low_latency_max_rows:
                    batches = self._read_within_limit(store, ranges)
                    if batches is not None:
                        self._shipped = (*given, batches)
                        return [RangesPartition(
                            tuple((t, b, e) for t, (b, e) in sorted(ranges.items())),
                            socket.gethostname(), file_identity(self.options.path), self._shape,
                        )]
                return plan_range_partitions(store, self.options, self.schema, ranges)
        finally:
            store.close()

    def getCache(
        self, start: dict[str, Any], end: dict[str, Any]
    ) -> Iterator[pa.RecordBatch] | None:
        """The rows :meth:`partitions` read for ``[start, end)``, or None: executors read it.

        Spark copies the iterator to serve a batch planned twice, so it runs over a list.
        """
        shipped, self._shipped = self._shipped, None
        if shipped is None or (shipped[0], shipped[1]) != (start, end):
            return None
        return iter(shipped[2])

    def _read_within_limit(
        self, store: Store, ranges: dict[str, tuple[int, int]]
    ) -> list[pa.RecordBatch] | None:
        batches: list[pa.RecordBatch] = []
        size = 0
        for batch in ranges_batches(self.options, self.schema, self._shape, ranges, store,
                                    SHIP_CHUNK_ROWS):
            size += batch.nbytes
            if size > SHIPPED_MAX_BYTES:
                return None
            batches.append(batch)
        return batches
