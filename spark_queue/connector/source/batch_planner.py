"""One streaming query's batch planning, on the driver, over typed offsets.

Every stream reader (``latencyMode`` throughput, auto and low) turns the offsets Spark hands
it into a :class:`~spark_queue.connector.offset_json.SourceOffset` once, asks a
:class:`SourcePlanner` for the next batch, and hands Spark the end's JSON back: only the
methods Spark calls see a dict. The planner holds the query's driver-side state (the
trigger's admission, the offsets already checked against the store, the query's own
position under ``consumer``, the named topics not created yet), all of it meaningful only
in the query's one long-lived planning process.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spark_queue.connector.offset_json import SourceOffset
from spark_queue.connector.source.admission import Limits, TriggerAdmission
from spark_queue.connector.source.batch_plans import record_plan, replanned_end
from spark_queue.connector.source.lineage import HistoryGuard
from spark_queue.connector.source.offsets import (
    Bounds,
    MissingTopics,
    open_source_store,
    starting_offsets,
    subscribed_bounds,
)
from spark_queue.connector.source.query_position import QueryPosition
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.connector.source.topic_columns import columns_end
from spark_queue.errors import StoreBusyError

if TYPE_CHECKING:
    from spark_queue.store import Store

log = logging.getLogger("spark_queue.connector")


@dataclass(frozen=True)
class BatchPlan:
    """The next batch: from ``start`` (as Spark handed it back; ``planned``, its positions
    as checked against the store) to ``end`` (``start`` itself: no batch now). ``first``:
    ``start`` is the one ``initialOffset`` chose in this process."""

    start: SourceOffset
    planned: dict[str, int]
    end: SourceOffset
    first: bool

    @property
    def runs(self) -> bool:
        return self.end is not self.start


def read_bounds(options: SourceOptions) -> Bounds:
    """``(earliest, latest)`` of every subscribed topic, from a connection opened for it."""
    store = open_source_store(options)
    try:
        return subscribed_bounds(store, options)
    finally:
        store.close()


class SourcePlanner:
    """Plans one query's batches over :class:`SourceOffset` values."""

    def __init__(self, options: SourceOptions, *, reports_latest: bool = True) -> None:
        self.options = options
        self.admission = TriggerAdmission(options, time.monotonic)
        # The offsets Spark hands back, checked against the history the store holds.
        self.history = HistoryGuard(options)
        # This query's own position under ``consumer`` (queries may share the name).
        self.query = QueryPosition(options)
        # Named topics the store does not hold yet: the stream waits for them (a producer
        # may create them later) and says so once.
        self.missing = MissingTopics(reports_latest=reports_latest)

    def initial(self) -> SourceOffset:
        """Where a new query starts (``startingOffsets`` / ``startingTimestamp``), with the
        store's identity, the fingerprints of the events before it and the query's id; under
        ``consumer``, the start is chosen and saved as the query's position in ONE write
        transaction: retention never deletes what the first batch reads
        (:mod:`~spark_queue.connector.source.query_position`)."""
        from spark_queue.store import store_id

        options, reader = self.options, self.query.starting()
        store = open_source_store(options)
        try:
            chosen: dict[str, int] = {}

            def choose() -> dict[str, int]:
                bounds = subscribed_bounds(store, options)
                chosen.update(starting_offsets(store, options, bounds))
                return {t: o for t, o in chosen.items() if t in bounds and o <= bounds[t][1]}

            if options.consumer is not None:
                try:
                    store.save_start(options.consumer, reader, choose)
                    return self.query.started(
                        self.history.record(store, store_id(store), chosen, {}, reader))
                except StoreBusyError as exc:  # advisory, like every saved offset: start anyway
                    log.warning("sqliteq source: could not save the start of consumer %r (the "
                                "first batch is held from its first commit on): %s",
                                options.consumer, exc)
                    chosen.clear()
            with store.snapshot():
                choose()
                return self.query.started(
                    self.history.record(store, store_id(store), chosen, {}, reader))
        finally:
            store.close()

    def planning(self, start: SourceOffset) -> bool:
        """Spark asks for the batch after ``start``: the query's position is saved at it
        (:meth:`QueryPosition.planning`, before the store is read for the plan); whether
        ``start`` is the one ``initialOffset`` chose in this process."""
        return self.query.planning(start)

    def next_batch(
        self, store: Store, identity: str, bounds: Bounds, start: SourceOffset, limits: Limits,
        first: bool = False,
    ) -> BatchPlan:
        """The batch after ``start``: its end as handed to Spark (the store's identity,
        fingerprints, the query's id), or ``start`` itself when no batch should run now; the
        end this query recorded for ``start`` when it plans a batch again
        (:mod:`~spark_queue.connector.source.batch_plans`). ``start`` is checked first:
        offsets of another store file, or of a history the store no longer holds, are
        refused (:class:`HistoryGuard`); with ``valueSchema=topic`` the batch ends where a
        topic's columns change (:func:`~spark_queue.connector.source.topic_columns.columns_end`).
        Caller holds one snapshot of ``store``; then :meth:`record` s the plan outside it."""
        self.missing.note(self.options, bounds, store)
        planned, kept = self.history.plan_from(store, identity, start, bounds)
        # valueSchema=topic: no batch reads events of a newer schema version in the old
        # columns; one starting at the change raises (tests/connector/source/
        # test_topic_columns.py).
        ends = columns_end(store, self.options, planned)
        end = self.admission.next_end(planned, bounds, limits)
        end = {t: min(o, ends[t]) if t in ends else o for t, o in end.items()}
        # A batch Spark plans again (its offsets/N torn by a power cut) covers what it covered.
        end = replanned_end(store, self.options, start, planned, bounds, first) or end
        if end == start.positions:
            return BatchPlan(start, planned, start, first)
        offsets = self.history.record(store, identity, end, kept, self.query.reader)
        return BatchPlan(start, planned, offsets, first)

    def record(self, store: Store, plan: BatchPlan) -> None:
        """Record the plan's end for its start, durable before Spark logs it (no-op without
        a batch); outside any transaction of ``store``."""
        if plan.runs:
            record_plan(store, self.options, plan.start, plan.end, plan.first)

    def checked_range(
        self, store: Store, start: SourceOffset, end: SourceOffset, bounds: Bounds
    ) -> tuple[dict[str, int], dict[str, int]]:
        """``(start, end)`` of a batch Spark plans, as ``{topic: offset}`` to read, each
        checked to be of this very store file and of the history it holds (a batch replayed
        after a restart reaches here first). Caller holds one snapshot."""
        from spark_queue.store import store_id

        identity = store_id(store)
        return (self.history.plan_from(store, identity, start, bounds)[0],
                self.history.plan_from(store, identity, end, bounds)[0])
