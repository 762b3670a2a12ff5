"""A streaming query's own position under its ``consumer`` name.

One source DataFrame written by two sinks is two queries, each planning in its own
driver-side process and each saving under the same ``consumer``. So that retention waits
for the slower one, each saves its position under an id of its own (the store keeps one
row per id: :mod:`spark_queue.store.streams.consumer_positions`). The planning process
does not see Spark's query id, but it sees its own offsets come back from the checkpoint:
the id is chosen at the query's start (``initialOffset``) and carried in every offset the
source returns (``@reader``), so a restarted query saves under the same id. A query
without ``consumer`` carries one too: the batches it planned are recorded under it
(:mod:`~spark_queue.connector.source.batch_plans`); it saves no position.

Protection starts with the query: the start offsets are chosen and saved (unconfirmed) in
one write transaction, before Spark has planned the first batch. The position is confirmed
once Spark has checkpointed an offset naming the id (a batch is planned, or the query
resumed from its checkpoint); until then this process refreshes it every
``POSITION_REFRESH_MS``, and a start killed before its first checkpoint (whose id no
restart can name) stops holding retention after ``UNCONFIRMED_POSITION_HOLD_MS``.

Saving is advisory like every consumer offset (the checkpoint is the truth): a failure is
logged, never fatal. Runs only in the query's planning process.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable

from spark_queue.connector.offset_json import SourceOffset
from spark_queue.connector.source.offsets import check_store, open_source_store, subscribed_bounds
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.defaults import POSITION_REFRESH_MS
from spark_queue.errors import SparkQueueError

log = logging.getLogger("spark_queue.connector")


def new_reader_id() -> str:
    return uuid.uuid4().hex[:16]


class QueryPosition:
    """The id of this query under ``consumer`` and whether its checkpoint names it yet."""

    def __init__(
        self, options: SourceOptions, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.options = options
        self.reader: str | None = None
        self._started: SourceOffset | None = None  # what initialOffset returned in this process
        self._confirmed = False
        self._refreshed_at: float | None = None
        self._clock = clock

    def starting(self) -> str:
        """The id a new query carries in its offsets (and saves its start position under,
        with ``consumer``); every query has one: its planned batches are recorded under it
        (:mod:`~spark_queue.connector.source.batch_plans`)."""
        if self.reader is None:
            self.reader = new_reader_id()
        return self.reader

    def started(self, offsets: SourceOffset) -> SourceOffset:
        """Note the offsets ``initialOffset`` returns (saved by the caller as they were chosen)."""
        self._started = offsets
        self._refreshed_at = self._clock()
        return offsets

    def planning(self, start: SourceOffset) -> bool:
        """Spark asks for the batch after ``start``: adopt the id ``start`` carries (a
        restarted query) or choose one (a checkpoint written before ids); save the position
        at ``start`` as confirmed when ``start`` came from the checkpoint, else refresh it.
        Answers whether ``start`` is the start ``initialOffset`` chose in this process (a
        new checkpoint's first batch, or its first batch again after a torn ``offsets/0``)."""
        first = self._started is not None and start == self._started
        carried = start.reader
        if carried is not None:
            self.reader = carried
        elif self.reader is None:
            self.reader = new_reader_id()
        if self.options.consumer is None or self._confirmed:
            return first
        # Any start but the one initialOffset returned here was logged by Spark (a batch
        # planned since, or the checkpoint of an earlier run) under this id.
        logged = carried is not None and start != self._started
        now = self._clock()
        if not logged and self._refreshed_at is not None and (
            now - self._refreshed_at) * 1000 < POSITION_REFRESH_MS:
            return first
        if self.save(start, confirmed=logged):
            self._refreshed_at = now
            self._confirmed = logged
        return first

    def planned(self, start: SourceOffset, end: SourceOffset) -> None:
        """Spark planned ``[start, end)``: ``end``, naming the id, is in the offset log."""
        if self.options.consumer is None or self._confirmed or end.reader is None:
            return
        self.reader = end.reader
        self._confirmed = self.save(start, confirmed=True)

    def committed(self, end: SourceOffset) -> None:
        """Spark committed the batch ending at ``end``: the query's position moves there."""
        if self.save(end) and (end.reader or self.reader) is not None:
            self._confirmed = True

    def save(self, offsets: SourceOffset, *, confirmed: bool = True) -> bool:
        """Save ``offsets`` as this query's position (no-op without ``consumer``); advisory:
        a failure is logged and answers False. Offsets of another store file are not saved."""
        from spark_queue.store import store_id

        consumer = self.options.consumer
        if consumer is None:
            return False
        reader = offsets.reader or self.reader
        given = offsets.positions
        store = open_source_store(self.options)
        try:
            check_store(offsets, store_id(store), self.options)
            bounds = subscribed_bounds(store, self.options)
            topics = {t: o for t, o in given.items() if t in bounds and o <= bounds[t][1]}
            if topics:
                store.commit_offsets(consumer, topics, reader=reader, confirmed=confirmed,
                                     hand_over=self.options.starting == "committed")
            return True
        except SparkQueueError as exc:
            log.warning("sqliteq source: could not save offsets of consumer %r: %s",
                        consumer, exc)
            return False
        finally:
            store.close()
