"""``sq_publish``: a view through which any SQLite client publishes correctly.

A foreign writer that inserts into ``sq_events`` itself must read
``sq_topics.next_offset``, write the next offsets and advance it in one
transaction; forgetting any step leaves a hole or invisible rows. Inserting
into this view instead runs a trigger that checks each row against the
store's rules (the naming rule, storage class per ``value_type``, JSON of
type-2 values, header shape, integer ``ts_ms``), creates the topic if needed,
and assigns the next dense offset, all inside the INSERT statement's own
write transaction. So ``INSERT INTO sq_publish (topic, value) VALUES (?, ?)``
is the whole protocol, in any language. docs/file-format.md, "Publishing and
consuming from other languages", documents it; ``tests/end_to_end/test_foreign_producer.py``
runs it from Python's stdlib ``sqlite3`` (a different SQLite library) while
``Store.publish_many`` and a Spark query run.

Only core SQL functions the stdlib's SQLite 3.38+ has: ``julianday`` for
the clock (``unixepoch('subsec')`` needs 3.42) and the JSON functions.
"""

from __future__ import annotations

# A plain literal, no interpolation. The clock is epoch milliseconds from
# julianday(); 'now' is fixed for one statement, so a multi-row INSERT stamps
# every row alike, as publish_many does. A NULL value_type means BLOB -> 0
# (bytes), anything else -> 1 (text).
PUBLISH_VIEW_SQL = """
CREATE VIEW sq_publish (topic, offset, ts_ms, key, value, value_type, headers) AS
SELECT t.name, e.offset, e.ts_ms, e.key, e.value, e.value_type, e.headers
FROM sq_events e JOIN sq_topics t ON t.id = e.topic_id;

CREATE TRIGGER sq_publish_insert INSTEAD OF INSERT ON sq_publish
BEGIN
    SELECT RAISE(ABORT,
        'sq_publish: topic must be 1 to 200 characters from letters, digits, _ . and -')
    WHERE typeof(NEW.topic) != 'text' OR length(NEW.topic) NOT BETWEEN 1 AND 200
       OR NEW.topic GLOB '*[^A-Za-z0-9_.-]*';
    SELECT RAISE(ABORT, 'sq_publish: offset is assigned by the store; leave it NULL')
    WHERE NEW.offset IS NOT NULL;
    SELECT RAISE(ABORT,
        'sq_publish: ts_ms must be an INTEGER of epoch milliseconds, or NULL for now')
    WHERE typeof(NEW.ts_ms) NOT IN ('integer', 'null');
    SELECT RAISE(ABORT, 'sq_publish: key must be TEXT, BLOB or NULL')
    WHERE typeof(NEW.key) NOT IN ('text', 'blob', 'null');
    SELECT RAISE(ABORT,
        'sq_publish: value does not fit value_type (0: BLOB/NULL, 1: TEXT/NULL, 2: JSON TEXT)')
    WHERE CASE coalesce(NEW.value_type, CASE typeof(NEW.value) WHEN 'blob' THEN 0 ELSE 1 END)
        WHEN 0 THEN typeof(NEW.value) NOT IN ('blob', 'null')
        WHEN 1 THEN typeof(NEW.value) NOT IN ('text', 'null')
        WHEN 2 THEN CASE WHEN typeof(NEW.value) != 'text' THEN 1 ELSE NOT json_valid(NEW.value) END
        ELSE 1 END;
    SELECT RAISE(ABORT, 'sq_publish: headers must be NULL or a JSON object of string values')
    WHERE CASE
        WHEN NEW.headers IS NULL THEN 0
        WHEN typeof(NEW.headers) != 'text' THEN 1
        WHEN NOT json_valid(NEW.headers) THEN 1
        WHEN json_type(NEW.headers) != 'object' THEN 1
        ELSE EXISTS (SELECT 1 FROM json_each(NEW.headers) WHERE type != 'text') END;
    INSERT INTO sq_topics (name, created_ms)
    SELECT NEW.topic, CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
    WHERE NOT EXISTS (SELECT 1 FROM sq_topics WHERE name = NEW.topic);
    INSERT INTO sq_events (topic_id, offset, ts_ms, key, value, value_type, headers)
    SELECT id, next_offset,
           coalesce(NEW.ts_ms, CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)),
           NEW.key, NEW.value,
           coalesce(NEW.value_type, CASE typeof(NEW.value) WHEN 'blob' THEN 0 ELSE 1 END),
           NEW.headers
    FROM sq_topics WHERE name = NEW.topic;
    UPDATE sq_topics SET next_offset = next_offset + 1 WHERE name = NEW.topic;
END;
"""
