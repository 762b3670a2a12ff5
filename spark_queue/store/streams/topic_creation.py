"""Where a topic's row is created, and the store's one rule for a publish to a topic that
does not exist.

**The rule.** A publish to a missing topic creates it, on every path that publishes:
``Store.publish`` and ``publish_many``, the Producer, ``tx.publish`` in
``store.transaction()``, ``outbox.publish``, the Spark sink and the ``sq_publish`` view. The
store setting ``create_topics_on_publish`` (a meta key, absent: on) switched off makes
every one of them refuse it instead (:class:`~spark_queue.errors.UnknownTopicError` from
Python, the ``sq_publish`` trigger's error from any SQLite client), and a topic is then
created only when asked: ``store.topic(name).create()`` or ``configure()``, ``sqliteq topic
create``, ``sqliteq publish --create``, a Kafka import. docs/transactions.md says why the
default stays on (every producer written so far relies on it, and a producer may come up
before whoever would create the topic).

One function creates a topic's row, :func:`create`; the publish paths reach it through
:func:`~spark_queue.store.streams.event_log.open_log`, the explicit ones through
:func:`~spark_queue.store.streams.topic_log.ensure_topic`. Foreign clients are held to the
rule by the trigger ``sq_topics_created_when_asked`` (schema version 15,
:mod:`spark_queue.store.file.schema`), which refuses any insert into ``sq_topics`` while
the setting is off unless the meta table names the topic as asked for (``creating_topic``,
written and dropped here inside the creating transaction).
"""

from __future__ import annotations

import apsw

from spark_queue.errors import UnknownTopicError
from spark_queue.store.file import meta
from spark_queue.store.file.connection import now_ms


def creates_on_publish(conn: apsw.Connection) -> bool:
    """Whether a publish to a missing topic creates it (the store setting; default on)."""
    return meta.get(conn, meta.CREATE_TOPICS_ON_PUBLISH) != "0"


def set_creates_on_publish(conn: apsw.Connection, on: bool) -> None:
    """Store the setting (in the caller's write transaction)."""
    if not isinstance(on, bool):
        raise TypeError(f"create_topics_on_publish must be True or False; got {on!r}")
    meta.put(conn, meta.CREATE_TOPICS_ON_PUBLISH, "1" if on else "0")


def create(conn: apsw.Connection, topic: str, *, asked: bool) -> None:
    """Insert the row of ``topic``, which the caller found missing, holding the write lock;
    ``asked``: an explicit create, else a publish, refused while the setting is off."""
    if creates_on_publish(conn):
        conn.execute("INSERT INTO sq_topics (name, created_ms) VALUES (?, ?)",
                     (topic, now_ms()))
        return
    if not asked:
        raise UnknownTopicError(
            f"topic {topic!r} does not exist, and this store creates topics only when asked "
            "(its setting create_topics_on_publish is off): nothing was published, and the "
            "transaction's other writes are undone with it. Check the name, or create the "
            f"topic first: store.topic({topic!r}).create(), or `sqliteq topic create PATH "
            f"{topic}`."
        )
    meta.put(conn, meta.CREATING_TOPIC, topic)
    try:
        conn.execute("INSERT INTO sq_topics (name, created_ms) VALUES (?, ?)",
                     (topic, now_ms()))
    finally:
        meta.drop(conn, meta.CREATING_TOPIC)
