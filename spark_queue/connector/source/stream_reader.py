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

import logging
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from spark_queue.connector import compat
from spark_queue.connector.source.admission import ALL_AVAILABLE, Limits, TriggerAdmission
from spark_queue.connector.source.batch_plans import record_plan, replanned_end
from spark_queue.connector.source.lineage import HistoryGuard
from spark_queue.connector.source.offsets import (
    Bounds,
    MissingTopics,
    checkpoint_offsets,
    open_source_store,
    starting_offsets,
    subscribed_bounds,
)
from spark_queue.connector.source.partition_planner import plan_partitions
from spark_queue.connector.source.partition_reader import read_partition
from spark_queue.connector.source.query_position import QueryPosition
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.connector.source.topic_columns import check_unchanged
from spark_queue.errors import StoreBusyError

if TYPE_CHECKING:
    from spark_queue.store import Store

log = logging.getLogger("spark_queue.connector")


def read_bounds(options: SourceOptions):
    """``(earliest, latest)`` of every subscribed topic, from a connection opened for it."""
    store = open_source_store(options)
    try:
        return subscribed_bounds(store, options)
    finally:
        store.close()


def read_store(options: SourceOptions) -> tuple[str, Bounds]:
    """The store's identity and the subscribed topics' ``(earliest, latest)``, from one
    snapshot of a connection opened for it."""
    from spark_queue.store import store_id

    store = open_source_store(options)
    try:
        with store.snapshot():
            return store_id(store), subscribed_bounds(store, options)
    finally:
        store.close()


def initial_offsets(
    options: SourceOptions, guard: HistoryGuard, reader: str | None = None
) -> dict:
    """Where a new query starts (``startingOffsets`` / ``startingTimestamp``), with the store's
    identity, the fingerprints of the events before it and the query's id (``reader``);
    under ``consumer``, the start is chosen and saved as the query's position in ONE write
    transaction: retention never deletes what the first batch reads
    (:mod:`~spark_queue.connector.source.query_position`)."""
    from spark_queue.store import store_id

    store = open_source_store(options)
    try:
        chosen: dict[str, int] = {}

        def choose() -> dict[str, int]:
            bounds = subscribed_bounds(store, options)
            chosen.update(starting_offsets(store, options, bounds))
            return {t: o for t, o in chosen.items() if t in bounds and o <= bounds[t][1]}

        if options.consumer is not None and reader is not None:
            try:
                store.save_start(options.consumer, reader, choose)
                return guard.record(store, store_id(store), chosen, None, reader)
            except StoreBusyError as exc:  # advisory, like every saved offset: start anyway
                log.warning("sqliteq source: could not save the start of consumer %r (the "
                            "first batch is held from its first commit on): %s",
                            options.consumer, exc)
                chosen.clear()
        with store.snapshot():
            choose()
            return guard.record(store, store_id(store), chosen, None, reader)
    finally:
        store.close()


def next_offsets(
    admission: TriggerAdmission, guard: HistoryGuard, store: Store, start: dict, identity: str,
    bounds: Bounds, limits: Limits, reader: str | None = None, first: bool = False,
) -> dict:
    """The end of the next batch as handed to Spark (the store's identity, fingerprints, the
    query's id), or ``start`` itself (as Spark gave it) when no batch should run now; the
    end this query recorded for ``start`` when it plans a batch again
    (:mod:`~spark_queue.connector.source.batch_plans`: the caller records the end; ``first``:
    ``start`` is the one ``initialOffset`` chose in this process).
    ``start`` is checked first: offsets of another store file, or of a history the store no
    longer holds, are refused (:class:`HistoryGuard`). Caller holds one snapshot of ``store``."""
    planned = guard.plan_from(store, identity, start, bounds)
    end = admission.next_end(planned, bounds, limits)
    # A batch Spark plans again (its offsets/N torn by a power cut) covers what it covered.
    end = replanned_end(store, admission.options, start, planned, bounds, first) or end
    if end == checkpoint_offsets(start):
        return start
    return guard.record(store, identity, end, start, reader)


def checked_range(guard: HistoryGuard, store: Store, start: dict, end: dict, bounds: Bounds):
    """``(start, end)`` of a batch Spark plans as ``{topic: offset}`` to read, each checked
    to be this source's offsets of this very store file and of the history it holds (a
    batch replayed after a restart reaches here first). Caller holds one snapshot."""
    from spark_queue.store import store_id

    identity = store_id(store)
    return (guard.plan_from(store, identity, start, bounds),
            guard.plan_from(store, identity, end, bounds))


class SqliteQueueStreamReader(DataSourceStreamReader, compat.SupportsTriggerAvailableNow):
    """Micro-batches over ``{topic: next_offset}`` offsets of one store file."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        # Driver-side state, meaningful only in the long-lived planning process.
        self._admission = TriggerAdmission(options, time.monotonic)
        # pyspark < 4.2 calls latestOffset() without the start: the reader
        # follows the position itself, from initialOffset and from every
        # partitions(start, end) Spark plans (on restart Spark plans the empty
        # range at its checkpointed offset first: AcceptsLatestSeenOffset).
        self._position: dict | None = None
        # Named topics the store does not hold yet: the stream waits for them (a producer
        # may create them later), says so once, and reports them in latestOffset as null.
        self._missing = MissingTopics()
        # The offsets Spark hands back, checked against the history the store holds.
        self._history = HistoryGuard(options)
        # This query's own position under ``consumer`` (queries may share the name).
        self._query = QueryPosition(options)

    # -- offsets (driver) --------------------------------------------------
    def initialOffset(self) -> dict:
        offsets = self._query.started(
            initial_offsets(self.options, self._history, self._query.starting()))
        if self._position is None:
            self._position = offsets
        return offsets

    def getDefaultReadLimit(self):
        if self.options.max_rows_per_trigger is not None:
            return compat.ReadMaxRows(self.options.max_rows_per_trigger)
        if self.options.min_rows_per_trigger is not None:
            return compat.ReadMinRows(self.options.min_rows_per_trigger)
        return compat.ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._admission.prepare_available_now(read_bounds(self.options))

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        from spark_queue.store import keep_housekept

        keep_housekept(self.options.path)  # this planning process lives as long as the query
        from spark_queue.store import store_id

        if start is None:  # pyspark < 4.2
            start = self._position if self._position is not None else self.initialOffset()
        self._query.planning(start)
        store = open_source_store(self.options)
        try:
            with store.snapshot():
                if self.options.value_schema_versions:  # valueSchema=topic
                    check_unchanged(store, self.options)
                identity, bounds = store_id(store), subscribed_bounds(store, self.options)
                self._missing.note(self.options, bounds, store)
                first = self._query.first_batch(start)
                end = next_offsets(self._admission, self._history, store, start, identity,
                                   bounds, self._limits(limit), self._query.reader, first)
            record_plan(store, self.options, start, end, first)  # durable before Spark logs it
            return end
        finally:
            store.close()

    def _limits(self, limit) -> Limits:
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

    def reportLatestOffset(self) -> dict | None:
        latest = self._admission.last_latest
        if latest is None:
            bounds = read_bounds(self.options)
            latest = {t: last for t, (_, last) in bounds.items()}
        # A named topic that does not exist has no offset: null, visible in the progress.
        reported: dict[str, int | None] = {**latest, **dict.fromkeys(self._missing.now)}
        return {topic: reported[topic] for topic in sorted(reported)}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        self._position = end
        self._query.planned(start, end)
        store = open_source_store(self.options)
        try:
            with store.snapshot():
                bounds = subscribed_bounds(store, self.options)
                start, end = checked_range(self._history, store, start, end, bounds)
                return plan_partitions(store, self.options, self.schema, start, end, bounds)
        finally:
            store.close()

    def commit(self, end: dict) -> None:
        self._query.committed(end)

    # -- data (executors) --------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.options, self.schema, partition)
