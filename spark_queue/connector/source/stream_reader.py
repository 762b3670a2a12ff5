"""The streaming reader: offsets, admission control and micro-batch planning.

Which process runs what (pyspark 4.2; 4.0 and 4.1 alike): one long-lived driver-side Python
process per query calls ``initialOffset``, ``latestOffset``,
``reportLatestOffset``, ``partitions`` and ``commit`` on ONE instance, so
state kept on it (the AvailableNow target, the trigger-delay clock) lasts for
the query's run. ``read`` runs in executor workers on a copy unpickled from
another driver process: it sees only the parsed options and the schema.

Spark's checkpoint is the source of truth for the position. ``commit`` (when
``consumer`` is set) saves offsets in the store for retention, lag and
``startingOffsets=committed``, as this query's own position under the name
(:mod:`~spark_queue.connector.source.query_position`: the start is saved too); Spark
does not call it for the last batch before a stop, so saved offsets trail the
checkpoint by up to one batch. Nothing here
depends on ``commit`` or ``stop`` being called.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from spark_queue.connector import compat
from spark_queue.connector.offset_json import SourceOffset
from spark_queue.connector.source.admission import ALL_AVAILABLE, Limits
from spark_queue.connector.source.batch_planner import SourcePlanner, read_bounds
from spark_queue.connector.source.offsets import KeptStore, subscribed_bounds
from spark_queue.connector.source.partition_planner import plan_partitions
from spark_queue.connector.source.partition_reader import read_partition
from spark_queue.connector.source.source_options import SourceOptions


class SqliteQueueStreamReader(DataSourceStreamReader, compat.SupportsTriggerAvailableNow):
    """Micro-batches over ``{topic: next_offset}`` offsets of one store file: each method
    Spark calls parses the offsets it is handed into a :class:`SourceOffset` once, and the
    :class:`SourcePlanner` plans over those."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        # Driver-side state, meaningful only in the long-lived planning process.
        self._planner = SourcePlanner(options)
        # pyspark < 4.2 calls latestOffset() without the start: the reader
        # follows the position itself, from initialOffset and from every
        # partitions(start, end) Spark plans (on restart Spark plans the empty
        # range at its checkpointed offset first: AcceptsLatestSeenOffset).
        self._position: SourceOffset | None = None
        self._store = KeptStore(options)

    # -- offsets (driver) --------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        return self._initial().to_spark()

    def _initial(self) -> SourceOffset:
        offsets = self._planner.initial()
        if self._position is None:
            self._position = offsets
        return offsets

    def getDefaultReadLimit(self) -> Any:
        if self.options.max_rows_per_trigger is not None:
            return compat.ReadMaxRows(self.options.max_rows_per_trigger)
        if self.options.min_rows_per_trigger is not None:
            return compat.ReadMinRows(self.options.min_rows_per_trigger)
        return compat.ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._planner.admission.prepare_available_now(read_bounds(self.options))

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: Any = None
    ) -> dict[str, Any]:
        from spark_queue.store import keep_housekept, store_id

        keep_housekept(self.options.path)  # this planning process lives as long as the query
        if start is None:  # pyspark < 4.2
            begin = self._position if self._position is not None else self._initial()
        else:
            begin = SourceOffset.from_spark(start)
        first = self._planner.planning(begin)
        with self._store.use() as store:
            with store.snapshot():
                identity, bounds = store_id(store), subscribed_bounds(store, self.options)
                plan = self._planner.next_batch(store, identity, bounds, begin,
                                                self._limits(limit), first)
            self._planner.record(store, plan)  # durable before Spark logs it
        # No batch now: ``start`` back as Spark gave it, which Spark compares by its text.
        return plan.end.to_spark() if plan.runs or start is None else start

    def _limits(self, limit: Any) -> Limits:
        """Spark's ReadLimit (4.2+) as row limits; before 4.2 the options are the limits."""
        if limit is None:
            return Limits.of(self.options)
        if isinstance(limit, compat.ReadAllAvailable):
            return ALL_AVAILABLE
        if isinstance(limit, compat.ReadMaxRows):
            return Limits(limit.max_rows, self.options.min_rows_per_trigger)
        if isinstance(limit, compat.ReadMinRows):
            return Limits(self.options.max_rows_per_trigger, limit.min_rows)
        return Limits.of(self.options)

    def reportLatestOffset(self) -> dict[str, int | None]:
        latest = self._planner.admission.last_latest
        if latest is None:
            bounds = read_bounds(self.options)
            latest = {t: last for t, (_, last) in bounds.items()}
        # A named topic that does not exist has no offset: null, visible in the progress.
        reported: dict[str, int | None] = {**latest, **dict.fromkeys(self._planner.missing.now)}
        return {topic: reported[topic] for topic in sorted(reported)}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = SourceOffset.from_spark(start)
        stop = SourceOffset.from_spark(end)
        self._position = stop
        self._planner.query.planned(begin, stop)
        with self._store.use() as store, store.snapshot():
            bounds = subscribed_bounds(store, self.options)
            first, last = self._planner.checked_range(store, begin, stop, bounds)
            return plan_partitions(store, self.options, self.schema, first, last, bounds)

    def commit(self, end: dict[str, Any]) -> None:
        self._planner.query.committed(SourceOffset.from_spark(end))

    # -- data (executors) --------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.options, self.schema, partition)
