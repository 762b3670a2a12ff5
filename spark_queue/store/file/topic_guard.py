# ruff: noqa: E501 - a trigger's RAISE message is one SQL string literal, on one line.
"""The trigger that holds every SQLite client to the store's rule for a publish to a topic
that does not exist (schema version 15; the rule: :mod:`spark_queue.store.streams.topic_creation`)."""

from __future__ import annotations

# One rule for a publish to a topic that does not exist
# (spark_queue/store/streams/topic_creation.py): with sq_meta create_topics_on_publish = '0'
# a topic is created only when asked. Python asks with the sq_meta row creating_topic (the
# name) inside the creating transaction; every other insert into sq_topics, the sq_publish
# trigger's among them, is refused, so a misspelt topic of a foreign client creates nothing
# either; an insert of an existing name (a client's ON CONFLICT DO NOTHING) passes, as
# BEFORE triggers fire before the conflict. RAISE(ABORT) undoes the statement and leaves
# the caller's transaction open.
TOPIC_GUARD_SQL = """
CREATE TRIGGER sq_topics_created_when_asked BEFORE INSERT ON sq_topics
WHEN EXISTS (SELECT 1 FROM sq_meta WHERE key = 'create_topics_on_publish' AND value = '0')
 AND NOT EXISTS (SELECT 1 FROM sq_meta WHERE key = 'creating_topic' AND value = NEW.name)
 AND NOT EXISTS (SELECT 1 FROM sq_topics WHERE name = NEW.name)
BEGIN
    SELECT RAISE(ABORT, 'sq_publish: the topic does not exist, and this store creates topics only when asked (sq_meta create_topics_on_publish = 0); nothing was published: create it first with sqliteq topic create PATH TOPIC, or check the name');
END;
"""

