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
before; the batch planned from them records one. Runs in the query's planning process only.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from spark_queue.connector.offset_json import reader_of
from spark_queue.connector.source.offsets import Bounds, checkpoint_offsets
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import StoreBusyError

if TYPE_CHECKING:
    from spark_queue.store import Store

log = logging.getLogger("spark_queue.connector")


def replanned_end(
    store: Store, options: SourceOptions, start: dict, planned: dict[str, int], bounds: Bounds
) -> dict[str, int] | None:
    """The end this query recorded for a batch from ``start`` (as Spark hands it back), if
    the store still serves ``[planned, end)`` (``planned``: ``start`` as checked against
    the store); None when nothing applies. Caller holds one snapshot of ``store``."""
    from spark_queue.store import planned_end

    reader = reader_of(start)
    if reader is None:
        return None
    end = planned_end(store, reader, checkpoint_offsets(start))
    if end is None:
        return None
    if all(t in bounds and planned.get(t, 0) <= o <= bounds[t][1] for t, o in end.items()):
        return end
    log.info("%s source: the batch this query planned from %s to %s is no longer in the "
             "store (%s); planning it anew.", FORMAT_NAME, start, end, bounds)
    return None


def record_plan(store: Store, options: SourceOptions, start: dict, end: dict) -> None:
    """Record the end ``end`` of the batch from ``start`` before Spark sees it, under the
    query id ``start`` carries (no-op without one, or without a batch; a store kept busy
    past its timeout is logged, not fatal, as a saved offset is). Call it outside any
    transaction of ``store``."""
    from spark_queue.store import record_planned_end

    reader = reader_of(start)
    if reader is None or end is start:
        return
    try:
        record_planned_end(store, options.consumer, reader, checkpoint_offsets(start),
                           checkpoint_offsets(end))
    except StoreBusyError as exc:  # a writer held the lock past the busy timeout: run the
        # batch anyway; only a power cut before its next plan would make its replay inexact
        log.warning("%s source: could not record the batch planned from %s to %s (consumer "
                    "%r): %s", FORMAT_NAME, start, end, options.consumer, exc)
