"""A topic's copy elsewhere (a Kafka topic): the fixed shift between the two logs.

A copy's log starts at 0; a topic whose head retention already removed starts
at its earliest offset. The difference is the *shift*: the copy's offset of an
event is its store offset minus the shift. It is fixed by the first export of
the topic and kept in ``sq_meta`` (key ``mirror_shift/<topic>``), so every
later export, and every position turned into a position of the copy, applies
the same number. Deleting the topic forgets it.
"""

from __future__ import annotations

import apsw

from spark_queue.errors import CorruptStoreError
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.names import validate_name

_PREFIX = "mirror_shift/"


def _key(topic: str) -> str:
    return _PREFIX + validate_name(topic)


def shift(conn: apsw.Connection, topic: str) -> int | None:
    """The recorded shift of ``topic``'s copy, or None if it was never exported."""
    row = conn.execute("SELECT value FROM sq_meta WHERE key = ?", (_key(topic),)).fetchone()
    if row is None:
        return None
    try:
        value = int(row[0])
    except (TypeError, ValueError) as exc:
        raise CorruptStoreError(
            f"sq_meta {_key(topic)!r} holds {row[0]!r}, not an offset shift; delete the row "
            "and export the topic to a new copy."
        ) from exc
    return value


def fix_shift(conn: apsw.Connection, topic: str, value: int) -> int:
    """Record ``value`` as ``topic``'s shift unless one is recorded; return the recorded one
    (caller holds the write transaction). A shift is an offset: 0 up to SQLite's bound."""
    check_int(value, "shift")
    recorded = shift(conn, topic)
    if recorded is not None:
        return recorded
    conn.execute("INSERT INTO sq_meta (key, value) VALUES (?, ?)", (_key(topic), str(value)))
    return value


def forget(conn: apsw.Connection, topic: str) -> None:
    """Drop ``topic``'s shift (its copy no longer describes a topic of this name)."""
    conn.execute("DELETE FROM sq_meta WHERE key = ?", (_key(topic),))
