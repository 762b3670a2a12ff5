"""Consumer offsets: where each named consumer will read next, per topic.

A saved offset is the next offset the consumer will read (Kafka's
convention). Saves are monotonic: a save below the stored value leaves it
unchanged unless the caller asks for a reset, so a late or replayed commit
can never move a consumer backwards. A name shared by several streaming queries keeps
one position per query (:mod:`~spark_queue.store.streams.consumer_positions`) and its
offset here is the lowest of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import apsw

from spark_queue.errors import OffsetRangeError
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.connection import Row, first_value, now_or
from spark_queue.store.file.names import validate_name
from spark_queue.store.file.replica_mark import readable_bounds
from spark_queue.store.streams import consumer_positions, planned_batches
from spark_queue.store.streams.topic_reads import topic_id

# The one writer of sq_consumers: the sq_save_offset view's trigger keeps the rule (a name,
# a topic, 0..readable end, never back unless reset) for Python and every SQLite client
# alike (spark_queue/store/file/offset_views.py).
_SAVE = ("INSERT INTO sq_save_offset (consumer, topic_id, next_offset, reset, updated_ms) "
         "VALUES (?, ?, ?, ?, ?)")
_SAVED = "SELECT next_offset FROM sq_consumers WHERE consumer = ? AND topic_id = ?"


def save(conn: apsw.Connection, consumer: str, tid: int, offset: int, *, reset: bool,
         topic: str | None = None, at_ms: int | None = None) -> int:
    """Save ``consumer``'s ``offset`` on topic ``tid`` through the rule (caller's write
    transaction); the stored value. A refusal raises OffsetRangeError naming the topic's
    readable end; nothing is saved."""
    try:
        conn.execute(_SAVE, (consumer, tid, offset, int(reset), now_or(at_ms)))
    except apsw.ConstraintError as exc:
        if "sq_save_offset:" not in str(exc):
            raise
        within_readable_end(conn, consumer, topic or f"id {tid}", tid, offset)
        raise OffsetRangeError(f"consumer {consumer!r}: {exc}") from exc
    return int(first_value(conn.execute(_SAVED, (consumer, tid))))


def within_readable_end(
    conn: apsw.Connection, consumer: str, topic: str, tid: int, offset: int
) -> int:
    """``offset`` if it is an integer from 0 to topic ``tid``'s readable end (the view's
    bound, :func:`~spark_queue.store.file.replica_mark.readable_bounds`), else
    OffsetRangeError naming that end: the message of a refusal, and the check of a query's
    position (sq_consumer_positions, which the view's trigger does not write)."""
    latest = readable_bounds(conn, tid)[1]
    return check_int(offset, f"offset for topic {topic!r} (its latest offset is {latest})",
                     high=latest, error=OffsetRangeError, owner=f"consumer {consumer!r}")


class ConsumerInfo(NamedTuple):
    consumer: str
    topic: str
    next_offset: int
    latest: int
    lag: int
    updated_ms: int


def commit(
    conn: apsw.Connection, consumer: str, offsets: Mapping[str, int], *, reset: bool = False,
    reader: str | None = None, confirmed: bool = True, hand_over: bool = False,
) -> dict[str, int]:
    """Save ``offsets`` for ``consumer`` (caller holds the write lock); return the stored values.

    With ``reader``, the offsets are that query's position under the name
    (:mod:`~spark_queue.store.streams.consumer_positions`) and the name's offset becomes the
    lowest position. Without, the name's offset itself; a reset moves every position too."""
    validate_name(consumer, "consumer")
    stored = {}
    for topic, offset in offsets.items():
        tid = topic_id(conn, topic)
        # A replicated store: an offset saves only what readers may see (replica_mark).
        if reader is not None:
            within_readable_end(conn, consumer, topic, tid, offset)
            stored[topic] = consumer_positions.save(conn, consumer, tid, reader, offset,
                                                    confirmed=confirmed, reset=reset,
                                                    hand_over=hand_over)
            continue
        check_int(offset, f"offset for topic {topic!r}", error=OffsetRangeError,
                  owner=f"consumer {consumer!r}")
        stored[topic] = save(conn, consumer, tid, offset, reset=reset, topic=topic)
        if reset:
            consumer_positions.reset_all(conn, consumer, tid, offset)
    return stored


def committed(conn: apsw.Connection, consumer: str) -> dict[str, int]:
    """The saved offsets of ``consumer`` by topic name (empty if it never committed)."""
    validate_name(consumer, "consumer")
    return dict(
        conn.execute(
            "SELECT t.name, c.next_offset FROM sq_consumers c "
            "JOIN sq_topics t ON t.id = c.topic_id WHERE c.consumer = ? ORDER BY t.name",
            (consumer,),
        )
    )


def list_consumers(conn: apsw.Connection, topic: str | None = None) -> list[ConsumerInfo]:
    """Every consumer's offset and lag (latest - next_offset, never below 0)."""
    sql = (
        "SELECT c.consumer, t.name, c.next_offset, t.next_offset, c.updated_ms "
        "FROM sq_consumers c JOIN sq_topics t ON t.id = c.topic_id"
    )
    params: tuple[int, ...] = ()
    if topic is not None:
        sql += " WHERE c.topic_id = ?"
        params = (topic_id(conn, topic),)
    rows: list[Row] = conn.execute(sql + " ORDER BY t.name, c.consumer", params).fetchall()
    # A saved offset beyond latest (only another SQLite client can store one;
    # `sqliteq check` reports it) means nothing is left to read: lag 0, never negative.
    return [
        ConsumerInfo(name, tname, nxt, latest, max(0, latest - nxt), updated)
        for name, tname, nxt, latest, updated in rows
    ]


def delete(
    conn: apsw.Connection, consumer: str, topic: str | None = None, reader: str | None = None
) -> int:
    """Forget a consumer's offsets and its queries' positions (one topic or all; of all, the
    batches they planned too); returns how many rows of the name's offsets went. With
    ``reader``, only that query's position and plans go (:func:`consumer_positions.delete`),
    and the count is of its position's rows."""
    validate_name(consumer, "consumer")
    tid = None if topic is None else topic_id(conn, topic)
    if reader is not None:
        planned_batches.forget(conn, consumer, reader)
        return consumer_positions.delete(conn, consumer, tid, reader)
    consumer_positions.delete(conn, consumer, tid, None)
    if topic is None:
        planned_batches.forget(conn, consumer)
        conn.execute("DELETE FROM sq_consumers WHERE consumer = ?", (consumer,))
    else:
        conn.execute(
            "DELETE FROM sq_consumers WHERE consumer = ? AND topic_id = ?",
            (consumer, tid),
        )
    return conn.changes()
