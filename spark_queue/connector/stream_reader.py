"""The streaming reader: offsets, admission control and micro-batch planning.

Which process runs what (pyspark 4.2): one long-lived driver-side Python
process per query calls ``initialOffset``, ``latestOffset``,
``reportLatestOffset``, ``partitions`` and ``commit`` on ONE instance, so
state kept on it (the AvailableNow target, the trigger-delay clock) lasts for
the query's run. ``read`` runs in executor workers on a copy unpickled from
another driver process: it sees only the parsed options and the schema.

Spark's checkpoint is the source of truth for the position. ``commit`` (when
``consumer`` is set) saves offsets in the store for retention, lag and
``startingOffsets=committed``; Spark does not call it for the last batch before
a stop, so saved offsets trail the checkpoint by up to one batch. Nothing here
depends on ``commit`` or ``stop`` being called.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from spark_queue.connector.offsets import (
    cap_rows,
    effective_start,
    open_store,
    sorted_offsets,
    starting_offsets,
    subscribed_bounds,
)
from spark_queue.connector.partition_planner import plan_partitions
from spark_queue.connector.partition_reader import read_partition
from spark_queue.connector.source_options import FORMAT, SourceOptions
from spark_queue.errors import OffsetRangeError, SparkQueueError

log = logging.getLogger("spark_queue.connector")


class SqliteQueueStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over ``{topic: next_offset}`` offsets of one store file."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        # Driver-side state, meaningful only in the long-lived planning process.
        self._available_now_target: dict[str, int] | None = None
        self._last_trigger_s: float | None = None
        self._last_latest: dict[str, int] | None = None
        self._clock = time.monotonic

    # -- offsets (driver) --------------------------------------------------
    def initialOffset(self) -> dict:
        store = open_store(self.options)
        try:
            with store.snapshot():
                bounds = subscribed_bounds(store, self.options)
                return starting_offsets(store, self.options, bounds)
        finally:
            store.close()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_rows_per_trigger is not None:
            return ReadMaxRows(self.options.max_rows_per_trigger)
        if self.options.min_rows_per_trigger is not None:
            return ReadMinRows(self.options.min_rows_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        store = open_store(self.options)
        try:
            bounds = subscribed_bounds(store, self.options)
        finally:
            store.close()
        # Topics created after this point are not part of this run.
        self._available_now_target = {t: latest for t, (_, latest) in bounds.items()}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        store = open_store(self.options)
        try:
            bounds = subscribed_bounds(store, self.options)
        finally:
            store.close()
        latest = {t: b[1] for t, b in bounds.items()}
        self._last_latest = sorted_offsets(latest)
        target = self._available_now_target
        available: dict[str, int] = {}
        begins: dict[str, int] = {}
        for topic, top in latest.items():
            requested = start.get(topic, 0)
            if requested > top:
                raise OffsetRangeError(
                    f"{FORMAT} source: the checkpoint is at offset {requested} of topic "
                    f"{topic!r} but the store's latest offset is {top}: the store file was "
                    "replaced or restored from an older copy. Use a new checkpoint location "
                    "(with startingOffsets) to read this file."
                )
            if target is not None:
                top = min(top, target.get(topic, requested))
            begin = effective_start(topic, requested, bounds[topic][0], self.options)
            begins[topic] = begin
            if top > begin:
                available[topic] = top - begin
        admitted = self._admit(available, limit)
        # Offsets skipped over lost data (failOnDataLoss=false) move on even
        # without rows, so the gap is reported once, not on every trigger.
        skipped = {t: b for t, b in begins.items() if b > start.get(t, 0)}
        if not admitted and not skipped:
            return start
        end = {**start, **skipped}
        for topic, rows in admitted.items():
            end[topic] = begins[topic] + rows
        if admitted:
            self._last_trigger_s = self._clock()
        return sorted_offsets(end)

    def _admit(self, available: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        """Rows to take per topic under ``limit``; empty means "no batch now"."""
        now = self._clock()
        if self._last_trigger_s is None:
            self._last_trigger_s = now
        total = sum(available.values())
        if total == 0:
            return {}
        if isinstance(limit, ReadAllAvailable):
            return available
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        if max_rows is None:
            max_rows = self.options.max_rows_per_trigger
        min_rows = limit.min_rows if isinstance(limit, ReadMinRows) else None
        if min_rows is None:
            min_rows = self.options.min_rows_per_trigger
        # AvailableNow must finish: a min-rows wait there could last forever.
        if min_rows is not None and self._available_now_target is None and total < min_rows:
            waited_ms = (now - self._last_trigger_s) * 1000
            if waited_ms < self.options.max_trigger_delay_ms:
                return {}
        return available if max_rows is None else cap_rows(available, max_rows)

    def reportLatestOffset(self) -> dict | None:
        if self._last_latest is not None:
            return self._last_latest
        store = open_store(self.options)
        try:
            bounds = subscribed_bounds(store, self.options)
        finally:
            store.close()
        return sorted_offsets({t: latest for t, (_, latest) in bounds.items()})

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        store = open_store(self.options)
        try:
            with store.snapshot():
                bounds = subscribed_bounds(store, self.options)
                return plan_partitions(store, self.options, self.schema, start, end, bounds)
        finally:
            store.close()

    def commit(self, end: dict) -> None:
        if self.options.consumer is None:
            return
        store = open_store(self.options)
        try:
            bounds = subscribed_bounds(store, self.options)
            offsets = {t: o for t, o in end.items() if t in bounds and o <= bounds[t][1]}
            if offsets:
                store.commit_offsets(self.options.consumer, offsets)
        except SparkQueueError as exc:
            # Saved offsets are advisory (the checkpoint is the truth): log, go on.
            log.warning("sqliteq source: could not save offsets of consumer %r: %s",
                        self.options.consumer, exc)
        finally:
            store.close()

    # -- data (executors) --------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.options, self.schema, partition)
