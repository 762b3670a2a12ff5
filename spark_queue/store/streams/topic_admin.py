"""Topic administration: create a topic with its settings, change them, delete the topic.

A topic's settings are its retention (``retention_ms``, ``retention_rows``:
what :meth:`Topic.prune <spark_queue.store.Topic.prune>` applies when given no limit)
and its ``max_payload_bytes``. Each call is one write transaction the caller
holds: a topic is created together with its settings or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import apsw

from spark_queue.errors import OptionError, TopicExistsError
from spark_queue.setting_table import TOPIC_SETTING
from spark_queue.store.file import payload_limits, replica_mark
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.connection import one_row
from spark_queue.store.streams import consumer_positions, mirrors, retention, time_marks
from spark_queue.store.streams.topic_log import ensure_topic
from spark_queue.store.streams.topic_reads import (
    TopicInfo,
    bounds_of,
    find_id,
    list_topics,
    topic_id,
)

# The settings' names (declared in spark_queue/setting_table.py).
_SETTING_NAMES = tuple(TOPIC_SETTING)


class TopicDeleted(NamedTuple):
    """What :func:`delete` removed with the topic."""

    topic: str
    events: int
    consumers: list[str]


def configure(
    conn: apsw.Connection, topic: str, settings: Mapping[str, int | None], *, exist_ok: bool
) -> TopicInfo:
    """Create ``topic`` if missing and set the given settings (None clears one).

    Settings not given keep their value. ``exist_ok=False`` refuses a topic
    that exists already (:class:`TopicExistsError`), so a create never
    silently changes a topic someone else uses.
    """
    unknown = sorted(set(settings) - set(_SETTING_NAMES))
    if unknown:
        raise OptionError(
            f"unknown topic setting(s) {unknown}; the settings are {list(_SETTING_NAMES)}."
        )
    existing = find_id(conn, topic)
    if existing is not None and not exist_ok:
        raise TopicExistsError(
            f"topic {topic!r} already exists; change its settings with "
            f"`sqliteq topic config PATH {topic} ...` (or pass --if-not-exists)."
        )
    # The limits are validated before anything is written.
    limit = payload_limits.validate_limit(
        settings.get("max_payload_bytes"), f"topic {topic!r}"
    )
    tid = existing if existing is not None else ensure_topic(conn, topic)[0]
    if "max_payload_bytes" in settings:
        payload_limits.set_topic_limit(conn, tid, limit)
    if "retention_ms" in settings or "retention_rows" in settings:
        stored_ms, stored_rows = one_row(
            conn.execute("SELECT retention_ms, retention_rows FROM sq_topics WHERE id = ?", (tid,))
        )
        retention.set_retention(
            conn, topic,
            retention_ms=settings.get("retention_ms", stored_ms),
            retention_rows=settings.get("retention_rows", stored_rows),
        )
    return next(info for info in list_topics(conn) if info.name == topic)


def start_at(conn: apsw.Connection, topic: str, offset: int) -> None:
    """Create ``topic`` empty with ``offset`` as its next offset: the state of a topic whose
    events before ``offset`` retention removed (a copy that keeps another log's numbering).

    A topic that holds or ever held events (next offset not 0 nor ``offset``) is refused
    with :class:`TopicExistsError`; the caller holds the write transaction.
    """
    offset = check_int(offset, "offset", low=0)
    tid, nxt = ensure_topic(conn, topic)
    if nxt == offset:
        return
    if nxt != 0:
        raise TopicExistsError(
            f"topic {topic!r} already holds events up to offset {nxt - 1}; only a new topic "
            f"can start at offset {offset}."
        )
    conn.execute("UPDATE sq_topics SET next_offset = ? WHERE id = ?", (offset, tid))


def delete(conn: apsw.Connection, topic: str) -> TopicDeleted:
    """Remove ``topic``, its events and its consumers' saved offsets.

    Sink-ledger entries stay: they are keyed by sink id, not by topic (see
    :mod:`~spark_queue.store.floor.sinks`), so a sink that wrote here and keeps its id skips
    the batch ids it committed before, even into a topic of the same name created anew.
    """
    tid = topic_id(conn, topic)
    earliest, latest = bounds_of(conn, tid)
    names = [row[0] for row in conn.execute(
        "SELECT consumer FROM sq_consumers WHERE topic_id = ? ORDER BY consumer", (tid,)
    )]
    # Spelled out rather than left to ON DELETE CASCADE, so what goes does
    # not hang on the connection's foreign_keys pragma.
    conn.execute("DELETE FROM sq_events WHERE topic_id = ?", (tid,))
    time_marks.forget_topic(conn, tid)
    conn.execute("DELETE FROM sq_consumers WHERE topic_id = ?", (tid,))
    consumer_positions.forget_topic(conn, tid)
    conn.execute("DELETE FROM sq_topics WHERE id = ?", (tid,))
    # The id may be given again: a topic created under it starts with no replicated mark.
    replica_mark.forget_topic_mark(conn, tid)
    mirrors.forget(conn, topic)
    return TopicDeleted(topic, latest - earliest, names)
