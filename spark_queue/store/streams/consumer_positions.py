"""Positions of the queries reading under one consumer name, and the hold they put on
retention.

A consumer name may be shared: one source DataFrame written by two streaming queries is
two readers saving under the source's ``consumer``. Each reader (a streaming query,
named by an id its source carries in its checkpointed offsets) keeps its own position
here, monotonic like every saved offset. The name's offset in ``sq_consumers`` is the
lowest of its confirmed positions (what ``startingOffsets=committed`` and lag read), and retention
never deletes at or above any live position: the slower query is never overtaken
(``tests/store/streams/test_consumer_positions.py``).

A position is *unconfirmed* from its query's start until Spark has checkpointed an offset
naming the reader (its first planned batch). An unconfirmed position holds retention
only while refreshed (``UNCONFIRMED_POSITION_HOLD_MS``): a start killed before its first
checkpoint is never resumed under that id, so its hold must not last for good. A
confirmed position holds until its query commits past it or someone deletes it.
"""

from __future__ import annotations

from typing import NamedTuple

import apsw

from spark_queue.defaults import UNCONFIRMED_POSITION_HOLD_MS
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
# Rows that hold retention: confirmed ones, and unconfirmed ones refreshed lately.
_LIVE = "(confirmed = 1 OR updated_ms >= ?)"


class PositionInfo(NamedTuple):
    consumer: str
    topic: str
    reader: str
    next_offset: int
    latest: int
    lag: int
    updated_ms: int
    confirmed: bool


def _stale_before() -> int:
    return now_ms() - UNCONFIRMED_POSITION_HOLD_MS


def save(
    conn: apsw.Connection, consumer: str, tid: int, reader: str, offset: int, *,
    confirmed: bool, reset: bool = False,
) -> int:
    """Save ``reader``'s position (the caller holds the write lock and checked ``offset``),
    then the name's offset as the lowest live position; returns the reader's position."""
    validate_name(reader, "reader")
    stored = first_value(conn.execute(_RESET_SQL if reset else _ADVANCE_SQL,
                                      (consumer, tid, reader, offset, now_ms(), int(confirmed))))
    settle_name(conn, consumer, tid)
    return int(stored)


def settle_name(conn: apsw.Connection, consumer: str, tid: int) -> None:
    """Forget the name's stale unconfirmed positions on topic ``tid``; set the name's offset to
    the lowest confirmed position (it may move back: a query joined the name below it). A
    name without confirmed positions keeps its offset as saved; an unconfirmed position holds
    retention by its own row only, so a stale one holds nothing."""
    conn.execute(
        "DELETE FROM sq_consumer_positions WHERE consumer = ? AND topic_id = ? "
        "AND NOT " + _LIVE, (consumer, tid, _stale_before()),
    )
    low = first_value(conn.execute(
        "SELECT min(next_offset) FROM sq_consumer_positions WHERE consumer = ? AND topic_id = ? "
        "AND confirmed = 1",
        (consumer, tid),
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
    """``(consumer, offset)`` of the lowest saved offset or live position on topic ``tid``:
    retention's floor."""
    row = conn.execute(
        "SELECT consumer, next_offset FROM sq_consumers WHERE topic_id = ? UNION ALL "
        "SELECT consumer, next_offset FROM sq_consumer_positions WHERE topic_id = ? AND "
        + _LIVE + " ORDER BY 2, 1 LIMIT 1",
        (tid, tid, _stale_before()),
    ).fetchone()
    return None if row is None else (row[0], row[1])


def list_positions(conn: apsw.Connection, tid: int | None = None) -> list[PositionInfo]:
    """Every position (of one topic, or all) with its lag, stale unconfirmed ones left out."""
    sql = (
        "SELECT p.consumer, t.name, p.reader, p.next_offset, t.next_offset, p.updated_ms, "
        "p.confirmed FROM sq_consumer_positions p JOIN sq_topics t ON t.id = p.topic_id "
        "WHERE " + _LIVE.replace("confirmed", "p.confirmed").replace("updated_ms", "p.updated_ms")
    )
    params: tuple[int, ...] = (_stale_before(),)
    if tid is not None:
        sql += " AND p.topic_id = ?"
        params += (tid,)
    sql += " ORDER BY t.name, p.consumer, p.reader"
    rows: list[Row] = conn.execute(sql, params).fetchall()
    return [
        PositionInfo(name, tname, reader, nxt, latest, max(0, latest - nxt), updated, bool(ok))
        for name, tname, reader, nxt, latest, updated, ok in rows
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


def readers_of(conn: apsw.Connection, consumer: str, tid: int) -> list[tuple[str, int]]:
    """``(reader, next_offset)`` of each live position of the name on topic ``tid``, lowest
    first (what ``sqliteq check`` names when the name holds retention back)."""
    return [(p.reader, p.next_offset) for p in list_positions(conn, tid)
            if p.consumer == consumer]


def forget_topic(conn: apsw.Connection, tid: int) -> None:
    conn.execute("DELETE FROM sq_consumer_positions WHERE topic_id = ?", (tid,))
