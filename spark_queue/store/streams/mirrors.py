"""A topic's copy elsewhere (a Kafka topic): the fixed shift between the two logs.

A copy's log starts at 0; a topic whose head retention already removed starts
at its earliest offset. The difference is the *shift*: the copy's offset of an
event is its store offset minus the shift. It is fixed by the first export of
the topic and kept in the store's meta table (key ``mirror_shift/<topic>``), so every
later export, and every position turned into a position of the copy, applies
the same number. Deleting the topic forgets it.

A copy's position is a consumer's saved offset (``sq_consumers``) under a reserved
name, the *hold*: ``sqliteq.mirror`` for a copy under the same topic names, or
``sqliteq.mirror.<prefix>`` for one whose Kafka topics are ``<prefix><topic>``. Its
next offset is the store offset of the first event the copy has not got, so
retention, which never deletes at or above a saved offset unless forced, keeps every
event the copy still needs; ``sqliteq consumers`` and ``sqliteq metrics`` show it, and
``sqliteq consumer delete PATH NAME`` removes it.
"""

from __future__ import annotations

import apsw

from spark_queue.errors import CorruptStoreError, OptionError
from spark_queue.store.file import meta
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.names import MAX_NAME_LENGTH, validate_name

MIRROR_HOLD = "sqliteq.mirror"  # the reserved consumer name of a copy's position


def hold_name(prefix: str = "") -> str:
    """The consumer name that holds the position of the copy whose topics are
    ``prefix + topic``; OptionError if the prefix makes no valid name."""
    name = MIRROR_HOLD + ("." + prefix if prefix else "")
    try:
        return validate_name(name, "consumer")
    except ValueError as exc:
        raise OptionError(
            f"the Kafka topic prefix {prefix!r} makes no consumer name for the copy's position "
            f"({name!r}): a prefix holds at most {MAX_NAME_LENGTH - len(MIRROR_HOLD) - 1} of "
            "A-Z a-z 0-9 _ . -; choose a shorter one."
        ) from exc


def hold_prefix(consumer: str) -> str | None:
    """The Kafka topic prefix of a copy's hold named ``consumer``; None for another consumer."""
    if consumer == MIRROR_HOLD:
        return ""
    if consumer.startswith(MIRROR_HOLD + "."):
        return consumer[len(MIRROR_HOLD) + 1:]
    return None


def _key(topic: str) -> str:
    return meta.mirror_shift_key(validate_name(topic))


def shift(conn: apsw.Connection, topic: str) -> int | None:
    """The recorded shift of ``topic``'s copy, or None if it was never exported."""
    text = meta.get(conn, _key(topic))
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError as exc:
        raise CorruptStoreError(
            f"{meta.TABLE} {_key(topic)!r} holds {text!r}, not an offset shift; delete the row "
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
    meta.add(conn, _key(topic), str(value))
    return value


def forget(conn: apsw.Connection, topic: str) -> None:
    """Drop ``topic``'s shift (its copy no longer describes a topic of this name)."""
    meta.drop(conn, _key(topic))
