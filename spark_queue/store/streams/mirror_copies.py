"""The store's side of a copy being made (a Kafka export): its lease, its hold, and reads
that never renumber an event.

A copy is exact only if three things hold from the moment it opens a topic:

- **The hold comes first.** :meth:`MirrorCopies.open` reads the topic's bounds, fixes the
  copy's shift and saves the hold at the earliest offset in ONE write transaction, before
  the exporter asks Kafka anything: a retention run that starts while Kafka answers (any
  process's, the mirror's own housekeeping included) keeps every event, and the hold moves
  to Kafka's end once it is known (:meth:`MirrorCopies.save`). Only a forced prune can
  remove what the copy lacks; then :meth:`save` and :meth:`rows` refuse
  (:class:`~spark_queue.errors.MirrorGapError`): a saved position below the earliest
  offset, or rows that do not start where the copy ends, are never accepted.
- **The topic is the one opened.** A topic deleted and created anew under a running copy
  starts its offsets again; every read and save checks the topic's id, its creation time
  and its recorded shift (deleting a topic forgets its shift) against those the copy opened
  (:class:`~spark_queue.errors.MirrorTopicChangedError`).
- **One exporter per copy**: the lease of :mod:`~spark_queue.store.streams.mirror_lease`,
  checked in each save's transaction.

On a replicated store the copy keeps to what readers see, with ONE bound: :meth:`bounds`
is the readers' capped end (the replicated mark), read once per pass, and :meth:`rows`
returns exactly the range asked, never capped again, so a mark that moves during a pass
cannot shorten a chunk (the exporter would number the next one from where the short one
ended). The hold never names an offset past the capped end (:meth:`save`)
(``tests/kafka/test_export_replicated.py``).

``tests/kafka/test_export_guards.py`` puts a housekeeping run, a forced prune, a recreated
topic and a second exporter inside each window.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import apsw
import pyarrow as pa

from spark_queue.errors import MirrorGapError, MirrorTopicChangedError
from spark_queue.store.file.connection import HasStoreConnection, Row, first_value
from spark_queue.store.streams import arrow_read, consumer_offsets, mirror_lease, mirrors
from spark_queue.store.streams.topic_reads import bounds_of, readable_bounds_of, topic_id


class CopyMark(NamedTuple):
    """A store topic as its copy opened it: what a topic deleted and created anew differs in."""

    topic: str
    topic_id: int
    created_ms: int
    shift: int


class CopyOpened(NamedTuple):
    """What :meth:`MirrorCopies.open` found and saved, in one transaction."""

    mark: CopyMark
    earliest: int
    latest: int
    new_hold: bool  # the hold had no row for this topic before
    new_shift: bool  # the shift was fixed by this opening


class MirrorCopies:
    """The copies under one hold (``sqliteq.mirror[.<prefix>]``) that one exporter makes, on
    ``store``'s connection (one thread). :meth:`acquire` first; :meth:`release` at the end."""

    def __init__(self, store: HasStoreConnection, prefix: str = "", *,
                 lease_ms: int | None = None) -> None:
        self.file = store.file
        self.prefix = prefix
        self.hold = mirrors.hold_name(prefix)
        lease = mirror_lease.MIRROR_LEASE_MS if lease_ms is None else lease_ms
        self.me = mirror_lease.new_holder(lease)
        self.marks: dict[str, CopyMark] = {}  # every topic opened under this lease
        self._keeper: mirror_lease.LeaseKeeper | None = None

    # -- the lease ------------------------------------------------------------------------
    def acquire(self) -> MirrorCopies:
        """Take the copy's lease (MirrorLeaseError names who holds it) and keep it renewed."""
        with self.file.write() as conn:
            self.me = mirror_lease.take_lease(conn, self.hold, self.me)
        self._keeper = mirror_lease.LeaseKeeper(self.file.path, self.hold, self.me).start()
        return self

    def release(self) -> None:
        """Stop renewing and give the lease back (if still this exporter's); idempotent."""
        if self._keeper is None:
            return
        self._keeper.stop()
        self._keeper = None
        with self.file.write() as conn:
            mirror_lease.release_lease(conn, self.hold, self.me)

    # -- a topic's copy -------------------------------------------------------------------
    def open(self, topic: str) -> CopyOpened:
        """Start (or resume) ``topic``'s copy before any Kafka call: in one write transaction,
        check the lease, read the bounds, fix the shift (the earliest offset unless recorded)
        and save the hold at the earliest offset, so nothing it may lack can go."""
        with self.file.write() as conn:
            mirror_lease.check_lease(conn, self.hold, self.me)
            tid, created_ms = _topic_row(conn, topic)
            earliest, latest = bounds_of(conn, tid)
            recorded = mirrors.shift(conn, topic)
            shift = mirrors.fix_shift(conn, topic, earliest)
            mark = CopyMark(topic, tid, created_ms, shift)
            known = self.marks.get(topic)
            # Deleting a topic forgets its shift: a topic this copy opened before and finds
            # without one was deleted since, whatever its new id (ids can come again).
            if known is not None and (recorded is None or known[1:] != mark[1:]):
                raise _changed(self.prefix, known, recreated=True)
            held = conn.execute("SELECT 1 FROM sq_consumers WHERE consumer = ? AND topic_id = ?",
                                (self.hold, tid)).fetchone()
            consumer_offsets.commit(conn, self.hold, {topic: earliest}, reset=True)
        self.marks[topic] = mark
        return CopyOpened(mark, earliest, latest, held is None, recorded is None)

    def abandon(self, opened: CopyOpened) -> None:
        """Undo what :meth:`open` saved for a copy refused before it held anything: the hold
        it created, and the shift it fixed unless another copy's hold now relies on it."""
        if not (opened.new_hold or opened.new_shift):
            return
        mark = opened.mark
        with self.file.write() as conn:
            if _find(conn, mark.topic) != mark[1:3]:
                return  # the topic went: so did its hold and shift
            if opened.new_hold:
                conn.execute("DELETE FROM sq_consumers WHERE consumer = ? AND topic_id = ?",
                             (self.hold, mark.topic_id))
            others = conn.execute(
                "SELECT 1 FROM sq_consumers WHERE topic_id = ? AND consumer <> ? "
                "AND (consumer = ? OR consumer LIKE ?)",
                (mark.topic_id, self.hold, mirrors.MIRROR_HOLD, mirrors.MIRROR_HOLD + ".%"),
            ).fetchone()
            if opened.new_shift and others is None:
                mirrors.forget(conn, mark.topic)
                self.marks.pop(mark.topic, None)  # the next opening starts the copy anew

    def bounds(self, mark: CopyMark) -> tuple[int, int]:
        """``(earliest, latest)`` of the topic ``mark`` opened, checked to be that topic, as
        readers see them: on a replicated store, latest is the replicated mark. A pass reads
        it once and copies up to it."""
        with self.file.read() as conn:
            return _checked_bounds(conn, self.prefix, mark, readable=True)

    def rows(self, mark: CopyMark, start: int, end: int) -> pa.Table:
        """Exactly the events ``[start, end)`` of the topic ``mark`` opened, as
        ``Store.read_arrow`` returns them, from one snapshot: MirrorGapError if retention
        removed ``start`` or the store does not hold ``end - 1`` (never other rows
        renumbered). ``end`` is the caller's bound (:meth:`bounds` of this pass, or what
        Kafka holds); it is not capped at the replicated mark again, which may have moved."""
        with self.file.read() as conn:
            earliest, latest = _checked_bounds(conn, self.prefix, mark)
            if start < earliest:
                raise _gap(self.prefix, mark.topic, start, earliest, "rows from offset")
            if end > latest:
                raise MirrorGapError(
                    f"the copy of store topic {mark.topic!r} in Kafka topic "
                    f"{self.prefix + mark.topic!r} asked for events up to offset {end - 1}, "
                    f"but the store's end is {latest}: nothing of them was sent. Run "
                    "`sqliteq check` on the store, then the export again."
                )
            table = arrow_read.read_arrow(conn, mark.topic, start, end, capped=False)
        if table.num_rows and table.column("offset")[0].as_py() != start:  # belt and braces
            raise _gap(self.prefix, mark.topic, start, table.column("offset")[0].as_py(),
                       "rows from offset")
        return table

    def save(self, positions: Iterable[tuple[CopyMark, int]]) -> None:
        """Save the copy's positions (store offsets of the first event it lacks) as the
        hold, in one write transaction: the lease checked, each topic checked to be the
        one opened, and a position below the topic's earliest offset refused
        (MirrorGapError), never stored. A topic deleted since (and not created anew) has
        nothing left to hold: skipped. On a replicated store a position past the readers'
        capped end is saved as that end: the hold is a consumer's offset, which never passes
        what readers see (a copy ahead of a store restored with an older mark holds back
        retention a little longer; where the copy goes on is Kafka's end, not the hold)."""
        with self.file.write() as conn:
            mirror_lease.check_lease(conn, self.hold, self.me)
            for mark, offset in positions:
                if _find(conn, mark.topic) is None:
                    continue
                earliest, readable = _checked_bounds(conn, self.prefix, mark, readable=True)
                if offset < earliest:
                    raise _gap(self.prefix, mark.topic, offset, earliest, "events from offset")
                consumer_offsets.commit(conn, self.hold, {mark.topic: min(offset, readable)},
                                        reset=True)


def _topic_row(conn: apsw.Connection, topic: str) -> tuple[int, int]:
    tid = topic_id(conn, topic)  # the store's UnknownTopicError for a topic it lacks
    return tid, int(first_value(
        conn.execute("SELECT created_ms FROM sq_topics WHERE id = ?", (tid,))))


def _find(conn: apsw.Connection, topic: str) -> tuple[int, int] | None:
    row: Row | None = conn.execute("SELECT id, created_ms FROM sq_topics WHERE name = ?",
                                   (topic,)).fetchone()
    return None if row is None else (int(row[0]), int(row[1]))


def _checked_bounds(conn: apsw.Connection, prefix: str, mark: CopyMark, *,
                    readable: bool = False) -> tuple[int, int]:
    found = _find(conn, mark.topic)
    if found is None:
        raise _changed(prefix, mark, recreated=False)
    if found != (mark.topic_id, mark.created_ms) or mirrors.shift(conn, mark.topic) != mark.shift:
        raise _changed(prefix, mark, recreated=True)
    return (readable_bounds_of if readable else bounds_of)(conn, mark.topic_id)


def _changed(prefix: str, mark: CopyMark, *, recreated: bool) -> MirrorTopicChangedError:
    kafka_topic = prefix + mark.topic
    anew = " and created anew (its offsets start again)" if recreated else ""
    return MirrorTopicChangedError(
        f"store topic {mark.topic!r} was deleted{anew} while its copy was being made: Kafka "
        f"topic {kafka_topic!r} holds the deleted topic's events, and a new topic's would "
        "land at offsets that are not theirs. Nothing of a new topic was sent. To copy the "
        f"new topic, delete Kafka topic {kafka_topic!r} or export to another --prefix, then "
        "start the export again; to leave it out, start it again with --topic naming the "
        "others."
    )


def _gap(prefix: str, topic: str, offset: int, earliest: int, what: str) -> MirrorGapError:
    kafka_topic = prefix + topic
    return MirrorGapError(
        f"the copy of store topic {topic!r} in Kafka topic {kafka_topic!r} needs the {what} "
        f"{offset} on, but the store's events were removed up to {earliest - 1} (a forced "
        "prune, or the copy's hold deleted while it ran): going on would misnumber the copy, "
        "so nothing more was sent. If the Kafka topic is still empty, run the export again: a "
        "copy starts where the store starts now. Otherwise the copy cannot go on without a "
        f"gap: delete Kafka topic {kafka_topic!r} or export to another --prefix."
    )
