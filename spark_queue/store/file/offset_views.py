# ruff: noqa: E501 - a trigger's RAISE message is one SQL string literal, on one line.
"""Two rules of the store in SQL, once, for every client: a topic's readable end, and a
consumer's saved offset (schema version 13).

``sq_topic_ends`` is the end of each topic a reader may see: its next offset, or on a
replicated store the replicated mark (spark_queue/store/file/replica_mark.py: an entry
counts only for the topic it was written for, never below the topic's first stored
event). The store's readers (``Store.read``, ``topics``, the Spark source, the Kafka
mirror) and any SQLite client read it here, so a moving mark is the same bound for all.

``sq_save_offset`` is the one writer of ``sq_consumers``: ``Store.commit_offsets`` and a
query's name (spark_queue/store/streams/consumer_offsets.py, consumer_positions.py),
``spark_queue.outbox.commit_offsets`` and other languages' plain SQL insert into it, and
its trigger keeps the rule: a valid name, an existing topic, an integer from 0 to the
topic's readable end, never back unless ``reset``. A refusal is ``RAISE(ABORT)``: the
statement is undone and the caller's transaction stays open (docs/file-format.md).
``tests/store/streams/test_offset_rule.py`` holds Python and SQL to the same answers.

Only SQL SQLite 3.38+ has (the stdlib's): ``json_extract`` and ``julianday``.
"""

from __future__ import annotations

# The mark's entry of topic t counts only for the topic born when it was written
# (replica_mark_born, each entry's created_ms); a mark an older release wrote has no born
# map and counts for topics created no later than its last sync.
TOPIC_ENDS_SQL = """
CREATE VIEW sq_topic_ends (topic_id, topic, first_offset, next_offset, readable_end) AS
SELECT id, name, first_offset, next_offset,
       CASE WHEN replicated IS NULL THEN next_offset
            ELSE max(first_offset, min(next_offset, coalesce(entry, 0))) END
FROM (
    SELECT t.id, t.name, t.next_offset,
           coalesce((SELECT e.offset FROM sq_events e WHERE e.topic_id = t.id
                     ORDER BY e.offset LIMIT 1), t.next_offset) AS first_offset,
           m.url AS replicated,
           CASE WHEN m.born IS NOT NULL THEN
                    CASE WHEN json_extract(m.born, '$."' || t.id || '"') = t.created_ms
                         THEN json_extract(m.mark, '$."' || t.id || '"') END
                WHEN m.synced IS NULL OR t.created_ms <= m.synced
                    THEN json_extract(m.mark, '$."' || t.id || '"') END AS entry
    FROM sq_topics t,
         (SELECT (SELECT value FROM sq_meta WHERE key = 'replica_url') AS url,
                 (SELECT value FROM sq_meta WHERE key = 'replica_mark') AS mark,
                 (SELECT value FROM sq_meta WHERE key = 'replica_mark_born') AS born,
                 (SELECT CAST(value AS INTEGER) FROM sq_meta
                  WHERE key = 'replica_synced_ms') AS synced) AS m
);
"""

# topic or topic_id names the topic (topic_id wins); reset moves the offset back too;
# updated_ms NULL is now.
SAVE_OFFSET_SQL = """
CREATE VIEW sq_save_offset (consumer, topic, topic_id, next_offset, reset, updated_ms) AS
SELECT NULL, NULL, NULL, NULL, NULL, NULL WHERE 0;

CREATE TRIGGER sq_save_offset_insert INSTEAD OF INSERT ON sq_save_offset
BEGIN
    SELECT RAISE(ABORT, 'sq_save_offset: consumer must be 1 to 200 characters from letters, digits, _ . and -')
    WHERE typeof(NEW.consumer) != 'text' OR length(NEW.consumer) NOT BETWEEN 1 AND 200
       OR NEW.consumer GLOB '*[^A-Za-z0-9_.-]*';
    SELECT RAISE(ABORT, 'sq_save_offset: topic is not a topic of this store')
    WHERE NOT EXISTS (SELECT 1 FROM sq_topics
                      WHERE id = coalesce(NEW.topic_id, (SELECT id FROM sq_topics WHERE name = NEW.topic)));
    SELECT RAISE(ABORT, 'sq_save_offset: next_offset must be an INTEGER from 0 to the topic''s readable end (sq_topic_ends.readable_end: events a reader may see)')
    WHERE typeof(NEW.next_offset) != 'integer' OR NEW.next_offset < 0
       OR NEW.next_offset > (SELECT readable_end FROM sq_topic_ends
                             WHERE topic_id = coalesce(NEW.topic_id, (SELECT id FROM sq_topics WHERE name = NEW.topic)));
    INSERT INTO sq_consumers (consumer, topic_id, next_offset, updated_ms)
    SELECT NEW.consumer, id, NEW.next_offset,
           coalesce(NEW.updated_ms, CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER))
    FROM sq_topics WHERE id = coalesce(NEW.topic_id, (SELECT id FROM sq_topics WHERE name = NEW.topic))
    ON CONFLICT (consumer, topic_id) DO UPDATE SET
        next_offset = CASE WHEN coalesce(NEW.reset, 0) THEN excluded.next_offset
                           ELSE max(next_offset, excluded.next_offset) END,
        updated_ms = excluded.updated_ms;
END;
"""

OFFSET_VIEWS_SQL = TOPIC_ENDS_SQL + SAVE_OFFSET_SQL
