"""Is the store still the history the checkpoint read? Exact resumption, or a loud stop.

A store can go back in time under a query whose checkpoint lives elsewhere: a backup
(``sqliteq backup``) or a replica restored after the machine was lost is older than the
checkpoint. The copy keeps the store's identity (``@store``: it IS that store, earlier),
so the identity check passes. Two things can then go wrong:

- the store ends before the checkpoint's position (``latest < position``): the events
  the query read at ``[latest, position)`` are not in the copy, and the next events
  published will be numbered there;
- producers published past the position since the restore: the offsets below it now
  name events the query never read, and a query planning from its checkpoint would
  skip them without a word.

Offsets alone cannot tell the second case from a store that simply grew. So every
position the source records carries, per topic, the fingerprint of the event just
before it (the last one read: offset, time and a digest of its stored content,
:func:`spark_queue.store.event_fingerprints`), under ``@last`` in the offsets JSON.
When a query (re)starts, the first offsets Spark hands back are checked against the
store (:meth:`HistoryGuard.plan_from`): a store that ends before them, or holds another
event where the fingerprint was taken, stops the query with :class:`StoreRewoundError`,
at its first trigger and at every restart after, whatever was published since, naming
the topic, the gap and the ways out. Offsets the source produced itself in this process
are not checked again: the check costs one primary-key read per topic, once per start.

``failOnDataLoss=false`` goes on instead, with a WARNING: a store that ends before the
position goes on from the store's end (Kafka's source does the same when a partition's
offsets go back: the events published from then on are read; what the copy lost, the
query had already read); a store that grew past it goes on from the checkpoint's
position, skipping what was published since the restore below it (the warning names
the offsets), since where the copy ended is no longer known.

When retention removed the fingerprinted event, nothing can be compared and the
query plans as before this check existed: the events below the store's earliest
offset are gone for every reader, and the usual check (``failOnDataLoss``) reports a
gap between the position and the earliest offset. Retention cannot remove the
rewritten events of a query that saves its offsets (``consumer``): the restored copy's
saved offset holds them (it is at most the copy's end). Checkpoints written before
fingerprints have none: they get the checks of before (a store ending before the
position stops the query; one that grew past it goes unnoticed), and the first batch
planned records fingerprints from then on.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from spark_queue.connector.offset_json import SourceOffset
from spark_queue.connector.source.offsets import Bounds, check_store
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import StoreRewoundError
from spark_queue.times import format_time_ms

if TYPE_CHECKING:
    from spark_queue.store import Fingerprint, Store

log = logging.getLogger("spark_queue.connector")

#: How many checked or produced offsets a guard remembers: Spark hands back the last
#: one or two (a batch's start and end); more only bounds the memory.
REMEMBERED = 8

WAYS_OUT_DOC = "docs/operations.md#a-store-older-than-a-checkpoint"


def recorded(
    store: Store, identity: str, end: dict[str, int], kept: dict[str, Fingerprint],
    reader: str | None = None,
) -> SourceOffset:
    """``end`` as the source hands it to Spark: the query's id (:mod:`~spark_queue.connector.
    source.query_position`), the store's identity and the fingerprint of the event before
    each position (``kept`` where it still describes that event, else read from ``store``;
    none where the store does not hold it)."""
    from spark_queue.store import event_fingerprints

    marks = {t: kept[t] for t, o in end.items() if t in kept and kept[t].offset == o - 1}
    wanted = {t: o - 1 for t, o in end.items() if o > 0 and t not in marks}
    if wanted:
        marks.update(event_fingerprints(store, wanted))
    return SourceOffset.of(end, identity, marks, reader)


def behind_message(topic: str, position: int, latest: int, options: SourceOptions) -> str:
    """The store ends before the checkpoint's position in ``topic``."""
    return (
        f"{FORMAT_NAME} source: the checkpoint is at offset {position} of topic {topic!r} but "
        f"the store's latest offset is {latest}: {options.path!r} was put back to a copy "
        f"older than the checkpoint (a restored backup or replica; or the topic was deleted "
        f"and created anew), which lacks the events [{latest}, {position}) the query read, "
        f"and the events published next would take those offsets. Ways out: put back a copy "
        f"no older than the checkpoint (a newer backup, the replica) and restart; or set "
        f"failOnDataLoss=false to go on from offset {latest}, reading every event published "
        f"from now on; or give the query a new checkpointLocation ({WAYS_OUT_DOC})."
    )


def rewritten_message(
    topic: str, position: int, mark: Fingerprint, now: Fingerprint, latest: int,
    first_after: int, options: SourceOptions,
) -> str:
    """The store holds another event where the checkpoint's fingerprint was taken;
    ``first_after`` is the first offset stamped after the event the query read."""
    hint = example = ""
    if first_after < latest:  # an event stamped later: likely the first one since the restore
        hint = (f" (the first event stamped after the one it read is at offset {first_after}, "
                "likely where the copy ended)")
        example = f" (e.g. {{\"{topic}\": {first_after}}})"
    return (
        f"{FORMAT_NAME} source: the checkpoint read offset {mark.offset} of topic {topic!r} "
        f"as an event stamped {_stamp(mark.ts_ms)}, but {options.path!r} holds another event "
        f"there (stamped {_stamp(now.ts_ms)}): the store was put back to a copy older than "
        f"the checkpoint (a restored backup or replica; or the topic was deleted and created "
        f"anew) and has grown past the checkpoint's position {position} since (latest offset "
        f"{latest}), so offsets below {position} may name events this query never read"
        f"{hint}. Ways out: put back a copy no older than the checkpoint (a newer backup, the "
        f"replica) and restart; or give the query a new checkpointLocation with "
        f"startingOffsets{example} or startingTimestamp (when the store was restored) to read "
        f"what was published since; or set failOnDataLoss=false to go on from offset "
        f"{position}, skipping what was published below it ({WAYS_OUT_DOC})."
    )


def _stamp(ts_ms: int) -> str:
    try:
        return format_time_ms(ts_ms)
    except (OverflowError, ValueError, OSError):  # a time a producer gave, out of range
        return f"{ts_ms} ms"


class HistoryGuard:
    """Checks each start or end Spark hands back once, against the store, before any batch
    is planned from it; remembers offsets it checked or produced (driver-side state, in the
    query's long-lived planning process; a fresh process checks again)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        # offsets -> (the offsets to plan from, the fingerprints still valid)
        self._known: dict[SourceOffset, tuple[dict[str, int], dict[str, Fingerprint]]] = {}

    def plan_from(
        self, store: Store, identity: str, given: SourceOffset, bounds: Bounds
    ) -> tuple[dict[str, int], dict[str, Fingerprint]]:
        """``({topic: offset} to plan from, the fingerprints of ``given`` still valid)``,
        for offsets ``given`` as Spark handed them back: of this store file (else
        CheckpointError), of the history the store holds (else StoreRewoundError, or a
        WARNING and the way on with failOnDataLoss=false). Caller holds one snapshot of
        ``store``."""
        known = self._known.get(given)
        if known is None:
            check_store(given, identity, self.options)
            known = self._check(store, given.positions, given.marks, bounds)
            self._remember(given, *known)
        return dict(known[0]), dict(known[1])

    def record(
        self, store: Store, identity: str, end: dict[str, int], kept: dict[str, Fingerprint],
        reader: str | None = None,
    ) -> SourceOffset:
        """``end`` as handed to Spark (:func:`recorded`), with the fingerprints ``kept`` (of
        its start, checked by :meth:`plan_from`) where they still apply; remembered as
        checked."""
        offsets = recorded(store, identity, end, kept, reader)
        self._remember(offsets, offsets.positions, offsets.marks)
        return offsets

    def _remember(
        self, offsets: SourceOffset, planned: dict[str, int], marks: dict[str, Fingerprint]
    ) -> None:
        self._known.pop(offsets, None)
        self._known[offsets] = (planned, marks)
        while len(self._known) > REMEMBERED:
            self._known.pop(next(iter(self._known)))

    def _check(
        self, store: Store, topics: dict[str, int], marks: dict[str, Fingerprint],
        bounds: Bounds,
    ) -> tuple[dict[str, int], dict[str, Fingerprint]]:
        from spark_queue.store import event_fingerprints

        planned = dict(topics)
        valid: dict[str, Fingerprint] = {}
        comparable = {
            t: m for t, m in marks.items()
            if t in topics and t in bounds and bounds[t][0] <= m.offset < bounds[t][1]
        }
        now = event_fingerprints(store, {t: m.offset for t, m in comparable.items()})
        for topic in sorted(topics):
            if topic not in bounds:
                continue  # not in the store (yet): MissingTopics says so, offsets wait
            position, (earliest, latest) = topics[topic], bounds[topic]
            mark = marks.get(topic)
            if position > latest or (mark is not None and mark.offset >= latest):
                self._behind(topic, position, latest)
                planned[topic] = latest
            elif mark is None:
                continue  # nothing recorded (an older checkpoint, or nothing read yet)
            elif now.get(topic) == mark:
                valid[topic] = mark
            elif topic in now:
                first_after = store.topic(topic).offset_for_timestamp(mark.ts_ms + 1)
                self._rewritten(topic, position, mark, now[topic], latest, first_after)
            else:  # below the earliest offset: retention removed it (maybe after the bounds
                # were read: offsets are dense, so a missing one below latest was pruned)
                log.info(
                    "%s source: cannot check that topic %r still holds the event the "
                    "checkpoint read at offset %d: retention removed it (earliest offset "
                    "%d); planning from offset %d as before.",
                    FORMAT_NAME, topic, mark.offset, earliest, position,
                )
        return planned, valid

    def _behind(self, topic: str, position: int, latest: int) -> None:
        message = behind_message(topic, position, latest, self.options)
        if self.options.fail_on_data_loss:
            raise StoreRewoundError(message)
        log.warning("%s Going on from offset %d (failOnDataLoss=false).", message, latest)

    def _rewritten(
        self, topic: str, position: int, mark: Fingerprint, now: Fingerprint, latest: int,
        first_after: int,
    ) -> None:
        message = rewritten_message(topic, position, mark, now, latest, first_after,
                                    self.options)
        if self.options.fail_on_data_loss:
            raise StoreRewoundError(message)
        log.warning("%s Going on from offset %d (failOnDataLoss=false).", message, position)
