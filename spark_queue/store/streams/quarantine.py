"""A topic's quarantine: the events its schema kept out (``on_invalid="quarantine"``).

Each row holds the event as its writer gave it (value, value type, key, headers, timestamp,
byte for byte), why it failed and against which schema version, the topic's next offset then
and the writer (``python``, ``sq_publish``) with its batch row. The topic's offsets stay
dense and hold only valid events. Replaying puts the events that now fit (after a schema
change, or a fix) at the topic's next offsets through
:func:`~spark_queue.store.streams.event_log.write_events` and deletes them here; the rest
stay. ``sq_topics.quarantined_total`` counts every event ever quarantined (the metric).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import apsw

from spark_queue.errors import UnknownTopicError
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.connection import HasStoreConnection
from spark_queue.store.streams.event_log import open_log, write_events


class QuarantinedEvent(NamedTuple):
    """One row of a topic's quarantine; ``value``, ``key`` and ``headers`` as stored."""

    id: int
    topic: str
    schema_version: int
    next_offset: int
    writer: str
    batch_row: int | None
    ts_ms: int
    key: str | bytes | None
    value: Any
    value_type: int
    headers: str | None
    reason: str
    quarantined_ms: int


class Replayed(NamedTuple):
    """What a replay did: the offsets given to the events that now fit, and the ids of the
    ones that still do not (left in the quarantine)."""

    offsets: list[int]
    still_invalid: list[int]


_ROWS = ("SELECT q.id, t.name, q.schema_version, q.next_offset, q.writer, q.batch_row, "
         "q.ts_ms, q.key, q.value, q.value_type, q.headers, q.reason, q.quarantined_ms "
         "FROM sq_quarantine q JOIN sq_topics t ON t.id = q.topic_id WHERE t.name = ? ")


def _ids(ids: Sequence[int] | None) -> list[int] | None:
    """``ids`` checked: quarantine ids are positive integers SQLite holds."""
    return None if ids is None else [check_int(i, "quarantine id", low=1) for i in ids]


def _topic_id(conn: apsw.Connection, topic: str) -> int:
    row = conn.execute("SELECT id FROM sq_topics WHERE name = ?", (topic,)).fetchone()
    if row is None:
        raise UnknownTopicError(f"topic {topic!r} does not exist; `sqliteq topics PATH` lists "
                                "the store's topics.")
    return int(row[0])


def held(conn: apsw.Connection, topic: str, ids: Sequence[int] | None = None,
           ) -> list[QuarantinedEvent]:
    """The topic's quarantined events, oldest first (only ``ids`` when given)."""
    ids = _ids(ids)
    _topic_id(conn, topic)
    rows = [QuarantinedEvent(*row) for row in conn.execute(_ROWS + "ORDER BY q.id", (topic,))]
    if ids is None:
        return rows
    wanted = set(ids)
    return [row for row in rows if row.id in wanted]


def replay_held(conn: apsw.Connection, topic: str, ids: Sequence[int] | None = None) -> Replayed:
    """Publish the quarantined events that fit the topic's schema now, in their order, and
    delete them from the quarantine (the caller's write transaction)."""
    ids = _ids(ids)
    log = open_log(conn, topic)
    offsets, still = [], []
    for event in held(conn, topic, ids):
        if log.schema is not None and log.schema.values.problem(event.value) is not None:
            still.append(event.id)
            continue
        offsets.append(log.next_offset)
        write_events(conn, log, [event.value], event.value_type, event.ts_ms,
                     None if event.key is None else [event.key],
                     None if event.headers is None else [event.headers])
        conn.execute("DELETE FROM sq_quarantine WHERE id = ?", (event.id,))
    return Replayed(offsets, still)


def purge_held(conn: apsw.Connection, topic: str, ids: Sequence[int] | None = None) -> int:
    """Delete the topic's quarantined events (only ``ids`` when given); how many went."""
    ids = _ids(ids)
    tid = _topic_id(conn, topic)
    if ids is None:
        return len(conn.execute("DELETE FROM sq_quarantine WHERE topic_id = ? RETURNING id",
                                (tid,)).fetchall())
    gone = 0
    for quarantine_id in ids:
        gone += len(conn.execute("DELETE FROM sq_quarantine WHERE topic_id = ? AND id = ? "
                                 "RETURNING id", (tid, quarantine_id)).fetchall())
    return gone


def quarantine_totals(store: HasStoreConnection) -> dict[str, int]:
    """Events ever quarantined, by topic, for each topic whose schema quarantines (0 from
    the moment it does, so a rate sees the first one); one read."""
    with store.file.read() as conn:
        return {name: total for name, total in conn.execute(
            "SELECT t.name, t.quarantined_total FROM sq_topics t WHERE t.quarantined_total > 0 "
            "OR (SELECT on_invalid FROM sq_topic_schemas s WHERE s.topic_id = t.id "
            "ORDER BY version DESC LIMIT 1) = 'quarantine' ORDER BY t.name")}
