"""Positions of the queries reading under one consumer name, and the hold they put on
retention.

A consumer name may be shared: one source DataFrame written by two streaming queries is
two readers saving under the source's ``consumer``. Each reader (a streaming query,
named by an id its source carries in its checkpointed offsets) keeps its own position
here, monotonic like every saved offset. The name's offset in ``sq_consumers`` is the
lowest of its holding confirmed positions (what ``startingOffsets=committed`` and lag
read), and retention never deletes at or above any holding position: the slower query is
never overtaken (``tests/store/streams/test_consumer_positions.py``).

A position is *unconfirmed* from its query's start until Spark has checkpointed an offset
naming the reader (its first planned batch). An unconfirmed position holds retention
only while refreshed (``UNCONFIRMED_POSITION_HOLD_MS``): a start killed before its first
checkpoint is never resumed under that id, so its hold must not last for good.

A confirmed position holds until its query commits past it, someone deletes it, or one of
two things says its query is gone (a query whose checkpoint was deleted never saves
again, and would hold the name and retention for good):

- **Hand-over.** A new query that resumed from the name (``startingOffsets=committed``)
  and whose first checkpointed position lands on a confirmed
  position of the name that was last saved before the new query started takes it over:
  the older position goes. That is what ``startingOffsets=committed`` with a new
  checkpoint does (it starts at the name's offset, the lowest position), so runs under
  one name with deleted checkpoints each go on from the last one
  (``tests/end_to_end/test_consumer_hand_over.py``). A query that restarts from its
  kept checkpoint afterwards saves again at its next batch: it is a second query then.
- **Stopped.** A position not saved for ``STOPPED_POSITION_HOLD_MS`` (7 days) holds
  nothing: it stays listed (``holds`` false, with its age) until deleted or saved again.
"""

from __future__ import annotations

from typing import NamedTuple

import apsw

from spark_queue.defaults import STOPPED_POSITION_HOLD_MS, UNCONFIRMED_POSITION_HOLD_MS
from spark_queue.store.file.connection import Row, first_value, now_ms
from spark_queue.store.file.names import validate_name

_SAVE_SQL = (
    "INSERT INTO sq_consumer_positions (consumer, topic_id, reader, next_offset, updated_ms, "
    "confirmed) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (consumer, topic_id, reader) DO UPDATE "
    "SET updated_ms = excluded.updated_ms, confirmed = max(confirmed, excluded.confirmed), "
)
_ADVANCE_SQL = (
    _SAVE_SQL + "next_offset = max(next_offset, excluded.next_offset) RETURNING next_offset"
)
_RESET_SQL = _SAVE_SQL + "next_offset = excluded.next_offset RETURNING next_offset"
# Rows that hold retention: confirmed ones saved within STOPPED_POSITION_HOLD_MS, and
# unconfirmed ones refreshed within UNCONFIRMED_POSITION_HOLD_MS (parameters: both times
# before which a row holds nothing, confirmed first: see _holds_since).
_HOLDS = "(CASE WHEN confirmed = 1 THEN updated_ms >= ? ELSE updated_ms >= ? END)"


class PositionInfo(NamedTuple):
    consumer: str
    topic: str
    reader: str
    next_offset: int
    latest: int
    lag: int
    updated_ms: int
    confirmed: bool
    # False: a stopped position (not saved for STOPPED_POSITION_HOLD_MS), which holds nothing.
    holds: bool = True


def _holds_since(now: int | None = None) -> tuple[int, int]:
    """The times before which a confirmed, then an unconfirmed, position holds nothing."""
    now = now_ms() if now is None else now
    return now - STOPPED_POSITION_HOLD_MS, now - UNCONFIRMED_POSITION_HOLD_MS


def save(
    conn: apsw.Connection, consumer: str, tid: int, reader: str, offset: int, *,
    confirmed: bool, reset: bool = False, hand_over: bool = False,
) -> int:
    """Save ``reader``'s position (the caller holds the write lock and checked ``offset``),
    then the name's offset as the lowest holding position; returns the reader's position.
    The reader's first confirmed save takes over the positions it lands on (the module's
    docstring, "Hand-over")."""
    validate_name(reader, "reader")
    before = conn.execute(
        "SELECT next_offset, updated_ms FROM sq_consumer_positions WHERE consumer = ? "
        "AND topic_id = ? AND reader = ? AND confirmed = 0", (consumer, tid, reader)).fetchone()
    stored = first_value(conn.execute(_RESET_SQL if reset else _ADVANCE_SQL,
                                      (consumer, tid, reader, offset, now_ms(), int(confirmed))))
    # Only a query that resumed from the name (startingOffsets=committed) goes on from a
    # position; two queries started together at one offset are two live queries
    # (docs/reading.md's fan-out).
    if confirmed and hand_over and before is not None:
        # Its start, saved unconfirmed when the query started (refreshed since, every
        # POSITION_REFRESH_MS): a position there not saved since is the query it goes on from.
        start, started_ms = before
        conn.execute(
            "DELETE FROM sq_consumer_positions WHERE consumer = ? AND topic_id = ? "
            "AND reader != ? AND confirmed = 1 AND next_offset = ? AND updated_ms < ?",
            (consumer, tid, reader, start, started_ms))
    settle_name(conn, consumer, tid)
    return int(stored)


def settle_name(conn: apsw.Connection, consumer: str, tid: int) -> None:
    """Forget the name's stale unconfirmed positions on topic ``tid``; set the name's offset to
    the lowest holding confirmed position (it may move back: a query joined the name below
    it). A name without one keeps its offset as saved; it holds retention only through
    positions that hold (:func:`lowest_hold`), so a name whose queries all stopped holds
    nothing."""
    stopped_before, unconfirmed_before = _holds_since()
    conn.execute(
        "DELETE FROM sq_consumer_positions WHERE consumer = ? AND topic_id = ? "
        "AND confirmed = 0 AND updated_ms < ?", (consumer, tid, unconfirmed_before),
    )
    low = first_value(conn.execute(
        "SELECT min(next_offset) FROM sq_consumer_positions WHERE consumer = ? AND topic_id = ? "
        "AND confirmed = 1 AND updated_ms >= ?",
        (consumer, tid, stopped_before),
    ))
    if low is not None:
        # Through the one writer of sq_consumers (offset_views.py), as a reset: the name
        # may move back when a query joins it below.
        conn.execute(
            "INSERT INTO sq_save_offset (consumer, topic_id, next_offset, reset, updated_ms) "
            "VALUES (?, ?, ?, 1, ?)",
            (consumer, tid, low, now_ms()),
        )


def reset_all(conn: apsw.Connection, consumer: str, tid: int, offset: int) -> None:
    """Move every position of the name on topic ``tid`` to ``offset`` (a reset of the name)."""
    conn.execute(
        "UPDATE sq_consumer_positions SET next_offset = ?, updated_ms = ? "
        "WHERE consumer = ? AND topic_id = ?",
        (offset, now_ms(), consumer, tid),
    )


def lowest_hold(conn: apsw.Connection, tid: int) -> tuple[str, int] | None:
    """``(consumer, offset)`` of the lowest hold on topic ``tid``, retention's floor: a saved
    offset of a name no query reads under, or a holding position (the offset of a name
    whose queries keep positions is theirs: when they all stopped, it holds nothing)."""
    row = conn.execute(
        "SELECT consumer, next_offset FROM sq_consumers c WHERE topic_id = ? AND NOT EXISTS ("
        "SELECT 1 FROM sq_consumer_positions p WHERE p.consumer = c.consumer "
        "AND p.topic_id = c.topic_id) UNION ALL "
        "SELECT consumer, next_offset FROM sq_consumer_positions WHERE topic_id = ? AND "
        + _HOLDS + " ORDER BY 2, 1 LIMIT 1",
        (tid, tid, *_holds_since()),
    ).fetchone()
    return None if row is None else (row[0], row[1])


def list_positions(conn: apsw.Connection, tid: int | None = None) -> list[PositionInfo]:
    """Every position (of one topic, or all) with its lag and whether it holds; stale
    unconfirmed ones (starts that never ran a batch) left out."""
    stopped_before, unconfirmed_before = _holds_since()
    sql = (
        "SELECT p.consumer, t.name, p.reader, p.next_offset, t.next_offset, p.updated_ms, "
        "p.confirmed, p.confirmed = 0 OR p.updated_ms >= ? FROM sq_consumer_positions p "
        "JOIN sq_topics t ON t.id = p.topic_id WHERE (p.confirmed = 1 OR p.updated_ms >= ?)"
    )
    params: tuple[int, ...] = (stopped_before, unconfirmed_before)
    if tid is not None:
        sql += " AND p.topic_id = ?"
        params += (tid,)
    sql += " ORDER BY t.name, p.consumer, p.reader"
    rows: list[Row] = conn.execute(sql, params).fetchall()
    return [
        PositionInfo(name, tname, reader, nxt, latest, max(0, latest - nxt), updated, bool(ok),
                     bool(holds))
        for name, tname, reader, nxt, latest, updated, ok, holds in rows
    ]


def delete(conn: apsw.Connection, consumer: str, tid: int | None, reader: str | None) -> int:
    """Forget the name's positions (one reader's, or all; one topic or all); returns how many
    rows went. After one reader's, the name's offset is the lowest position left; when none
    is left, the name's offset goes too (it was theirs)."""
    where = "consumer = ?"
    params: list[object] = [consumer]
    if tid is not None:
        where, params = where + " AND topic_id = ?", [*params, tid]
    if reader is not None:
        validate_name(reader, "reader")
        where, params = where + " AND reader = ?", [*params, reader]
    tids = [row[0] for row in conn.execute(
        "SELECT DISTINCT topic_id FROM sq_consumer_positions WHERE " + where, params)]
    conn.execute("DELETE FROM sq_consumer_positions WHERE " + where, params)
    deleted = conn.changes()
    if reader is not None:
        for topic in tids:
            left = conn.execute(
                "SELECT 1 FROM sq_consumer_positions WHERE consumer = ? AND topic_id = ?",
                (consumer, topic),
            ).fetchone()
            if left is None:
                conn.execute("DELETE FROM sq_consumers WHERE consumer = ? AND topic_id = ?",
                             (consumer, topic))
            else:
                settle_name(conn, consumer, topic)
    return deleted


def readers_of(conn: apsw.Connection, consumer: str, tid: int) -> list[PositionInfo]:
    """Each holding position of the name on topic ``tid``, lowest first (what ``sqliteq
    check`` and housekeeping's held-back report name when the name holds retention back)."""
    return sorted((p for p in list_positions(conn, tid) if p.consumer == consumer and p.holds),
                  key=lambda p: (p.next_offset, p.reader))


def forget_topic(conn: apsw.Connection, tid: int) -> None:
    conn.execute("DELETE FROM sq_consumer_positions WHERE topic_id = ?", (tid,))
