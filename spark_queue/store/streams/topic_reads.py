"""Reading topics: events by offset range, a topic's bounds, and the checks a read makes.

Offsets are dense per topic (see :mod:`spark_queue.store.streams.topic_log`), so a
read of ``[start, end)`` knows exactly which offsets it must return: every read
checks the rows it got against :func:`expected_range` and names what a foreign
writer broke, rather than return a range with holes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import apsw

from spark_queue.defaults import MAX_INT64
from spark_queue.errors import CorruptStoreError, OffsetRangeError, UnknownTopicError
from spark_queue.store.file.arguments import check_int, check_optional_int
from spark_queue.store.file.codec import VALUE_TYPE_NAMES, decode_headers, decode_value
from spark_queue.store.file.connection import Row, first_value
from spark_queue.store.file.names import validate_name
from spark_queue.store.file.replica_mark import readable_bounds
from spark_queue.store.streams import time_marks
from spark_queue.store.streams.event_log import span


@dataclass(frozen=True, slots=True)
class Event:
    """One stored event, as read back.

    ``value_type`` is how it was stored: ``bytes``, ``text`` or ``json`` (a
    JSON string and a text value read back as the same ``str``).
    """

    topic: str
    offset: int
    timestamp_ms: int
    key: str | bytes | None
    value: Any
    headers: dict[str, str] | None
    value_type: str


class TopicInfo(NamedTuple):
    name: str
    earliest: int
    latest: int
    count: int  # type: ignore[assignment]  # public since the first release; shadows tuple.count
    created_ms: int
    retention_ms: int | None
    retention_rows: int | None
    max_payload_bytes: int | None = None


def find_id(conn: apsw.Connection, topic: str) -> int | None:
    """The topic's id, or None if the store has no such topic."""
    row = conn.execute(
        "SELECT id FROM sq_topics WHERE name = ?", (validate_name(topic),)
    ).fetchone()
    return None if row is None else row[0]


def topic_id(conn: apsw.Connection, topic: str) -> int:
    """The id of an existing topic; UnknownTopicError names it otherwise."""
    tid = find_id(conn, topic)
    if tid is None:
        raise UnknownTopicError(f"topic {topic!r} does not exist in this store.")
    return tid

def check_range(start: int, end: int | None, limit: int | None) -> None:
    check_int(start, "start offset", error=OffsetRangeError)
    if end is not None and (isinstance(end, int) and not isinstance(end, bool) and end < start):
        raise OffsetRangeError(
            f"end offset must be an integer >= start ({start}); got {end!r}. "
            "Ranges are [start, end): end is exclusive."
        )
    check_optional_int(end, "end offset", error=OffsetRangeError, none_means="no end")
    check_optional_int(limit, "limit", error=OffsetRangeError, none_means="no limit")


def range_bounds(start: int, end: int | None, limit: int | None) -> int:
    """The exclusive upper offset of ``[start, end)`` capped to ``limit`` rows (dense offsets)."""
    check_range(start, end, limit)
    upper = MAX_INT64 if end is None else end
    if limit is not None:
        upper = min(upper, start + limit)
    return min(upper, MAX_INT64)


def expected_range(conn: apsw.Connection, tid: int, start: int, upper: int, *,
                   capped: bool = True) -> tuple[int, int]:
    """The offsets ``[first, stop)`` a read of ``[start, upper)`` must return, exactly.

    Retention removes only a prefix, so the range starts at the later of
    ``start`` and the earliest stored offset, and it ends before the topic's
    next offset (rows at or above it were never published through the store
    and stay invisible), and on a replicated store before the mark, unless not
    ``capped`` (a caller that took its end from the capped bounds already, once:
    the Kafka mirror). Caller holds the snapshot the rows come from.
    """
    earliest, nxt = readable_bounds_of(conn, tid) if capped else bounds_of(conn, tid)
    first = max(start, earliest)
    return first, max(first, min(upper, nxt))


def offsets_are_unique(conn: apsw.Connection) -> bool:
    """Whether ``sq_events`` still has its primary key ``(topic_id, offset)``.

    It makes offsets unique and range scans come back in offset order, which
    the bulk read's count check relies on; only a client that rebuilt the
    table can remove it. A lookup in the cached schema: microseconds.
    """
    columns = [
        row[0] for row in conn.execute(
            "SELECT ii.name FROM pragma_index_list('sq_events') AS il "
            "JOIN pragma_index_info(il.name) AS ii WHERE il.origin = 'pk' ORDER BY ii.seqno"
        )
    ]
    return columns == ["topic_id", "offset"]


def read(
    conn: apsw.Connection, topic: str, start: int, end: int | None = None, limit: int | None = None
) -> list[Event]:
    """Events with ``start <= offset < end``, at most ``limit`` of them, in offset order.

    Every offset is checked against :func:`expected_range` and every payload
    against its ``value_type``: a row a foreign writer broke raises
    CorruptStoreError naming topic and offset. Caller holds one snapshot.
    """
    upper = range_bounds(start, end, limit)
    tid = topic_id(conn, topic)
    first, stop = expected_range(conn, tid, start, upper)
    events = []
    expected = first
    for off, ts, key, value, vtype, headers in conn.execute(
        "SELECT offset, ts_ms, key, value, value_type, headers FROM sq_events "
        "WHERE topic_id = ? AND offset >= ? AND offset < ? ORDER BY offset",
        (tid, start, stop),
    ):
        if off != expected:
            expected = -1
            break
        expected += 1
        try:
            events.append(
                Event(topic, off, ts, key, decode_value(value, vtype), decode_headers(headers),
                      VALUE_TYPE_NAMES[vtype])
            )
        except CorruptStoreError as exc:
            raise CorruptStoreError(
                f"topic {topic!r} offset {off}: {exc}. A writer outside spark_queue stored "
                "this row; run `sqliteq check` on the store, and republish the event."
            ) from exc
    if expected != stop:
        offsets = [
            row[0] for row in conn.execute(
                "SELECT offset FROM sq_events WHERE topic_id = ? AND offset >= ? "
                "AND offset < ? ORDER BY offset", (tid, start, stop),
            )
        ]
        raise CorruptStoreError(offsets_message(topic, offsets, first, stop))
    return events


def offsets_message(topic: str, offsets: list[int], first: int, end: int) -> str:
    """What is wrong with ``offsets`` where ``first..end-1`` was expected, for an error."""
    problem = f"{len(offsets)} events where {end - first} were expected"
    steps = list(zip(offsets, offsets[1:], strict=False))
    twice = next((b for a, b in steps if b == a), None)
    back = next(((a, b) for a, b in steps if b < a), None)
    bounds = zip([first - 1, *offsets], [*offsets, end], strict=True)
    gaps = [(a, b) for a, b in bounds if b > a + 1]
    if twice is not None:
        problem = f"offset {twice} appears twice"
    elif back is not None:
        problem = f"offset {back[1]} comes after {back[0]}"
    elif gaps:
        problem = f"offsets {span(gaps[0][0] + 1, gaps[0][1] - 1)} are missing"
    return (
        f"topic {topic!r}: offsets in [{first}, {end}) are not dense: {problem}. A writer "
        "outside spark_queue deleted or inserted events; nothing was read. Run "
        "`sqliteq check` on the store and restore a backup (or republish the range)."
    )


def bounds(conn: apsw.Connection, topic: str) -> tuple[int, int]:
    """``(earliest, latest)``: the first stored offset and the next offset to be assigned.

    When retention removed every event, earliest == latest.
    """
    return readable_bounds_of(conn, topic_id(conn, topic))


def readable_bounds_of(conn: apsw.Connection, tid: int) -> tuple[int, int]:
    """:func:`bounds_of` as readers see it: on a replicated store, latest is capped at
    what the replica is known to hold (:mod:`spark_queue.store.file.replica_mark`)."""
    return readable_bounds(conn, tid)


def bounds_of(conn: apsw.Connection, tid: int) -> tuple[int, int]:
    """:func:`bounds` of the topic with id ``tid``."""
    latest = first_value(conn.execute("SELECT next_offset FROM sq_topics WHERE id = ?", (tid,)))
    first = conn.execute(
        "SELECT offset FROM sq_events WHERE topic_id = ? ORDER BY offset LIMIT 1", (tid,)
    ).fetchone()
    return (latest if first is None else first[0]), latest


def offset_for_timestamp(conn: apsw.Connection, topic: str, timestamp_ms: int) -> int:
    """The first offset whose timestamp is at or after ``timestamp_ms`` (latest if none)."""
    tid = topic_id(conn, topic)
    first = time_marks.first_at_or_after(conn, tid, check_int(timestamp_ms, "timestamp_ms"))
    end = readable_bounds_of(conn, tid)[1]
    return end if first is None else min(first, end)


def list_topics(conn: apsw.Connection) -> list[TopicInfo]:
    # Readers' ends (a replicated store: what the replica holds), from the one rule.
    rows: list[Row] = conn.execute(
        "SELECT t.name, e.first_offset, e.readable_end, t.created_ms, t.retention_ms, "
        "t.retention_rows, t.max_payload_bytes FROM sq_topics t "
        "JOIN sq_topic_ends e ON e.topic_id = t.id ORDER BY t.name"
    ).fetchall()
    # Retention only ever removes a prefix, so the count is latest - earliest.
    return [
        TopicInfo(name, first, latest, latest - first, created, r_ms, r_rows, max_bytes)
        for name, first, latest, created, r_ms, r_rows, max_bytes in rows
    ]
