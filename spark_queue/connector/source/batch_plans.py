"""A batch planned again from the same start ends where it ended (issue 54).

Spark logs a batch's range in ``offsets/N`` before running it, but Hadoop's local file
system never fsyncs that file: a power cut can leave it empty after a ``sqliteq`` sink
committed batch N in its ledger. Once ``sqliteq checkpoint repair`` removes the torn file,
Spark asks the source again for the batch after batch N-1's end. Planned afresh, that
batch would reach as far as the data does now, past batch N's old end if events arrived
since; the sink's ledger skips batch id N whole, and with it the events past the old end.

So the source records, per query (the ``@reader`` id its offsets carry, with or without
a ``consumer``) and per start, the end it chose, fsynced in the store before Spark sees it
(:mod:`spark_queue.store.streams.planned_batches`), and answers the same start with the
same end while the store still holds that range: the replayed batch is the batch the
ledger holds. Offsets without a reader id (a checkpoint written before ids) plan as
before; the batch planned from them records one.

A torn ``offsets/0`` leaves Spark nothing to hand back: it asks for a new start, and the
source chooses a new id. So a new query's first batch is also recorded under its options'
digest (:func:`first_batch_key`), and a first batch found under no id is looked up there:
a start chosen the same way again (``earliest``, given offsets or a time, while retention
kept it) gets the end chosen before. Another query with the very same options and start
may get that end too: a first batch no larger than its own plan, a range the store holds,
never a different one. Runs in the query's planning process only.
"""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING

from spark_queue.connector.offset_json import SourceOffset
from spark_queue.connector.source.offsets import Bounds
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import StoreBusyError

if TYPE_CHECKING:
    from spark_queue.store import Store

log = logging.getLogger("spark_queue.connector")


def first_batch_key(options: SourceOptions) -> str:
    """The name a new query's first batch is recorded under besides its id: a digest of its
    options (an upgrade that changes their form only misses the record)."""
    return "first-" + hashlib.sha256(repr(options).encode()).hexdigest()[:16]


def replanned_end(
    store: Store, options: SourceOptions, start: SourceOffset, planned: dict[str, int],
    bounds: Bounds, first: bool = False,
) -> dict[str, int] | None:
    """The end this query recorded for a batch from ``start`` (as Spark hands it back), if
    the store still serves ``[planned, end)`` (``planned``: ``start`` as checked against
    the store); with ``first`` (``start`` is the one this process's ``initialOffset``
    chose), the end recorded for a first batch from it under the same options. None when
    nothing applies. Caller holds one snapshot of ``store``."""
    from spark_queue.store import planned_end

    if start.reader is None:
        return None
    end = planned_end(store, start.reader, start.positions)
    if end is None and first:
        end = planned_end(store, first_batch_key(options), start.positions)
    if end is None:
        return None
    if all(t in bounds and planned.get(t, 0) <= o <= bounds[t][1] for t, o in end.items()):
        return end
    log.info("%s source: the batch this query planned from %s to %s is no longer in the "
             "store (%s); planning it anew.", FORMAT_NAME, start.to_spark(), end, bounds)
    return None


def record_plan(
    store: Store, options: SourceOptions, start: SourceOffset, end: SourceOffset,
    first: bool = False,
) -> None:
    """Record the end ``end`` of the batch from ``start`` before Spark sees it, under the
    query id ``start`` carries, and with ``first`` (a new query's first batch) under
    :func:`first_batch_key` too (no-op without an id, or without a batch; a store kept busy
    past its timeout is logged, not fatal, as a saved offset is). Call it outside any
    transaction of ``store``."""
    from spark_queue.store import record_planned_end

    reader = start.reader
    if reader is None or end is start:
        return
    begin, stop = start.positions, end.positions
    try:
        record_planned_end(store, options.consumer, reader, begin, stop)
        if first:  # once per new query: no consumer owns it, the unnamed age rule bounds it
            record_planned_end(store, None, first_batch_key(options), begin, stop)
    except StoreBusyError as exc:  # a writer held the lock past the busy timeout: run the
        # batch anyway; only a power cut before its next plan would make its replay inexact
        log.warning("%s source: could not record the batch planned from %s to %s (consumer "
                    "%r): %s", FORMAT_NAME, start.to_spark(), end.to_spark(), options.consumer,
                    exc)
