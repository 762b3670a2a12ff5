# ruff: noqa: E501 - a trigger's RAISE message is one SQL string literal, on one line.
"""``sq_publish``: a view through which any SQLite client publishes correctly.

A foreign writer that inserts into ``sq_events`` itself must read
``sq_topics.next_offset``, write the next offsets and advance it in one
transaction; forgetting any step leaves a hole or invisible rows. Inserting
into this view instead runs a trigger that checks each row against the
store's rules (the naming rule, storage class per ``value_type``, JSON of
type-2 values, header shape, integer ``ts_ms``, and from schema version 12 the
topic's ``max_payload_bytes``), creates the topic if needed,
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

# Literals only, joined, never interpolated: version 4's trigger and version 12's (which adds
# the size limit) share their checks and their write, so the two cannot drift apart. The clock
# is epoch milliseconds from julianday(); 'now' is fixed for one statement, so a multi-row
# INSERT stamps every row alike, as publish_many does. A NULL value_type means BLOB -> 0
# (bytes), anything else -> 1 (text).
# The checks every row passes.
_PUBLISH_CHECKS = """    SELECT RAISE(ABORT,
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
"""
# The write: the topic if new, the event at the topic's next offset, the offset moved on.
_PUBLISH_WRITE = """    INSERT INTO sq_topics (name, created_ms)
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
"""
PUBLISH_VIEW_SQL = """
CREATE VIEW sq_publish (topic, offset, ts_ms, key, value, value_type, headers) AS
SELECT t.name, e.offset, e.ts_ms, e.key, e.value, e.value_type, e.headers
FROM sq_events e JOIN sq_topics t ON t.id = e.topic_id;

CREATE TRIGGER sq_publish_insert INSTEAD OF INSERT ON sq_publish
BEGIN
""" + _PUBLISH_CHECKS + _PUBLISH_WRITE + "END;\n"


# ``sq_enqueue`` (schema version 9): the same for queues. The queue must exist (a typo must
# not make a queue no worker reads); its settings apply as Queue.enqueue applies them
# (spark_queue/store/queues/queue_jobs.py, enqueue_rows): max_payload_bytes, max_size, and
# the idempotency key, remembered for idempotency_window_ms or while its job lives, whose
# duplicate inserts nothing and does NOT fail: a retried request must not roll back the
# caller's transaction. A TEXT payload is JSON unless payload_type says 1 (plain text): a
# job's payload is usually an object. Each refusal names its column; RAISE(ABORT) undoes the
# statement and leaves the caller's transaction open (docs/file-format.md). A plain literal
# (no CTEs: SQLite has none in triggers). 4611686018427387903 is defaults.MAX_STORED
# (2**62 - 1), so now + delay_ms stays a 64-bit integer.
ENQUEUE_VIEW_SQL = """
CREATE VIEW sq_enqueue (queue, id, payload, payload_type, priority, delay_ms, ttl_ms,
                        idempotency_key, max_attempts) AS
SELECT q.name, j.id, j.value, j.value_type, j.priority,
       max(j.available_at - j.enqueued_ms, 0), j.expires_at - j.enqueued_ms,
       j.idempotency_key, j.max_attempts
FROM sq_jobs j JOIN sq_queues q ON q.id = j.queue_id;

CREATE TRIGGER sq_enqueue_insert INSTEAD OF INSERT ON sq_enqueue
BEGIN
    SELECT RAISE(ABORT, 'sq_enqueue: queue is not a queue of this store; create it first (Store.queue(name).configure() or sqliteq queue create PATH NAME), then enqueue')
    WHERE NOT EXISTS (SELECT 1 FROM sq_queues WHERE name = NEW.queue);
    SELECT RAISE(ABORT, 'sq_enqueue: id is assigned by the store; leave it NULL')
    WHERE NEW.id IS NOT NULL;
    SELECT RAISE(ABORT, 'sq_enqueue: payload_type must be NULL, 0 (bytes), 1 (text) or 2 (JSON text)')
    WHERE NEW.payload_type IS NOT NULL
      AND (typeof(NEW.payload_type) != 'integer' OR NEW.payload_type NOT IN (0, 1, 2));
    SELECT RAISE(ABORT, 'sq_enqueue: payload is not valid JSON text (a TEXT payload is JSON unless payload_type is 1; bytes go as a BLOB)')
    WHERE coalesce(NEW.payload_type, CASE typeof(NEW.payload) WHEN 'blob' THEN 0
                                     WHEN 'null' THEN 0 ELSE 2 END) = 2
      AND (typeof(NEW.payload) != 'text' OR NOT json_valid(NEW.payload));
    SELECT RAISE(ABORT, 'sq_enqueue: payload does not fit payload_type (0: BLOB or NULL, 1: TEXT or NULL)')
    WHERE (NEW.payload_type = 0 AND typeof(NEW.payload) NOT IN ('blob', 'null'))
       OR (NEW.payload_type = 1 AND typeof(NEW.payload) NOT IN ('text', 'null'));
    SELECT RAISE(ABORT, 'sq_enqueue: payload is larger than the queue''s max_payload_bytes (bytes as stored, UTF-8 for text); enqueue a smaller payload, or raise the limit: sqliteq queue config PATH NAME --max-payload-bytes N')
    FROM sq_queues q WHERE q.name = NEW.queue AND q.max_payload_bytes IS NOT NULL
      AND coalesce(length(CAST(NEW.payload AS BLOB)), 0) > q.max_payload_bytes;
    SELECT RAISE(ABORT, 'sq_enqueue: priority must be an INTEGER from -(2^62 - 1) to 2^62 - 1, or NULL for 0')
    WHERE NEW.priority IS NOT NULL AND (typeof(NEW.priority) != 'integer'
        OR NEW.priority NOT BETWEEN -4611686018427387903 AND 4611686018427387903);
    SELECT RAISE(ABORT, 'sq_enqueue: delay_ms must be a non-negative INTEGER of milliseconds (at most 2^62 - 1), or NULL for 0')
    WHERE NEW.delay_ms IS NOT NULL AND (typeof(NEW.delay_ms) != 'integer'
        OR NEW.delay_ms NOT BETWEEN 0 AND 4611686018427387903);
    SELECT RAISE(ABORT, 'sq_enqueue: ttl_ms must be a positive INTEGER of milliseconds (at most 2^62 - 1), or NULL for no TTL')
    WHERE NEW.ttl_ms IS NOT NULL AND (typeof(NEW.ttl_ms) != 'integer'
        OR NEW.ttl_ms NOT BETWEEN 1 AND 4611686018427387903);
    SELECT RAISE(ABORT, 'sq_enqueue: max_attempts must be a positive INTEGER, or NULL for the queue''s setting')
    WHERE NEW.max_attempts IS NOT NULL AND (typeof(NEW.max_attempts) != 'integer'
        OR NEW.max_attempts NOT BETWEEN 1 AND 4611686018427387903);
    SELECT RAISE(ABORT, 'sq_enqueue: idempotency_key must be non-empty TEXT, or NULL')
    WHERE NEW.idempotency_key IS NOT NULL
      AND (typeof(NEW.idempotency_key) != 'text' OR NEW.idempotency_key = '');
    SELECT RAISE(ABORT, 'sq_enqueue: queue is full (its max_size); let workers drain it and retry, or raise max_size: sqliteq queue config PATH NAME --max-size N')
    FROM sq_queues q WHERE q.name = NEW.queue AND q.max_size IS NOT NULL
      AND (SELECT count(*) FROM sq_jobs WHERE queue_id = q.id) >= q.max_size;
    INSERT INTO sq_jobs (queue_id, priority, available_at, max_attempts, expires_at,
                         idempotency_key, enqueued_ms, value, value_type)
    SELECT q.id, coalesce(NEW.priority, 0),
           CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
               + coalesce(NEW.delay_ms, 0),
           NEW.max_attempts,
           CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + NEW.ttl_ms,
           NEW.idempotency_key,
           CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER),
           NEW.payload,
           coalesce(NEW.payload_type, CASE typeof(NEW.payload) WHEN 'blob' THEN 0
                                      WHEN 'null' THEN 0 ELSE 2 END)
    FROM sq_queues q WHERE q.name = NEW.queue
      AND NOT (NEW.idempotency_key IS NOT NULL AND EXISTS (
          SELECT 1 FROM sq_job_keys k WHERE k.queue_id = q.id
             AND k.idempotency_key = NEW.idempotency_key
             AND (k.created_ms > CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
                                 - q.idempotency_window_ms
                  OR EXISTS (SELECT 1 FROM sq_jobs WHERE id = k.job_id)
                  OR EXISTS (SELECT 1 FROM sq_dead_jobs WHERE id = k.job_id))));
    -- The key now names the job the INSERT above made, if it made one: last_insert_rowid()
    -- is that job's id while the trigger runs (else the id of the connection's last insert
    -- before it, which a key row that already names it, or another key, tells apart).
    INSERT OR REPLACE INTO sq_job_keys (queue_id, idempotency_key, job_id, created_ms)
    SELECT j.queue_id, j.idempotency_key, j.id, j.enqueued_ms
    FROM sq_jobs j JOIN sq_queues q ON q.id = j.queue_id
    WHERE NEW.idempotency_key IS NOT NULL AND q.name = NEW.queue
      AND j.id = last_insert_rowid() AND j.idempotency_key = NEW.idempotency_key
      AND NOT EXISTS (SELECT 1 FROM sq_job_keys k WHERE k.queue_id = q.id
                      AND k.idempotency_key = NEW.idempotency_key AND k.job_id = j.id);
END;
"""


# Schema version 12: the trigger of version 4 plus the topic's ``max_payload_bytes``, which
# Store.publish, the Producer and the sink enforce (store/file/payload_limits.py: the value
# as stored, keys and headers not counted, at the limit accepted) and this view did not
# check. Version 4's text stays as it was (the same parts, joined without the limit):
# migrations are history, and a store migrates through it. RAISE(ABORT) as sq_enqueue's refusals: the statement is undone,
# the caller's transaction stays open (FAIL would keep a multi-row INSERT's earlier rows,
# ROLLBACK would end the caller's transaction). Its message is a literal, so it names
# neither the size nor the limit: SQLite before 3.47 (the stdlib's here is 3.40) accepts only a
# literal in RAISE, and a trigger it cannot parse makes the whole file unreadable to it
# ("malformed database schema"). The caller holds the value and the topic; the message
# says how the size is counted and where the limit is read.
_PUBLISH_LIMIT = """    SELECT RAISE(ABORT, 'sq_publish: value is larger than its topic''s max_payload_bytes (bytes as stored, UTF-8 for text; keys and headers are not counted; the limit: SELECT max_payload_bytes FROM sq_topics WHERE name = :topic); publish a smaller value, or raise the limit: sqliteq topic config PATH TOPIC --max-payload-bytes N')
    FROM sq_topics t WHERE t.name = NEW.topic AND t.max_payload_bytes IS NOT NULL
      AND coalesce(length(CAST(NEW.value AS BLOB)), 0) > t.max_payload_bytes;
"""
PUBLISH_LIMIT_SQL = (
    """
DROP TRIGGER sq_publish_insert;

CREATE TRIGGER sq_publish_insert INSTEAD OF INSERT ON sq_publish
BEGIN
"""
    + _PUBLISH_CHECKS + _PUBLISH_LIMIT + _PUBLISH_WRITE + "END;\n"
)


# Schema version 14: version 12's trigger plus the topic's schema (store/streams/schema_rows.py
# decides which JSON values each type accepts; the rows of sq_schema_fields hold it as data:
# paths, json_type() names, ranges, GLOB formats, so this text stays one literal whatever the
# schema). A value that fails is refused by an error whose text is built at run time: RAISE()
# takes only a literal before SQLite 3.47, but json_extract() with a path that is not a path
# fails with the path in its message ("JSON path error near '...'" on 3.40, "bad JSON path:
# '...'" later), so the message names the topic, the schema version, the field, the expected
# type and what the value held. Like RAISE(ABORT), the error undoes the statement and leaves
# the caller's transaction open (tests/store/file/test_publish_view_schema.py, with the stdlib
# sqlite3). A NULL value (a tombstone) is not checked; a value is read as UTF-8 text whatever
# its value_type (a BLOB of JSON is checked as its text). Elements of an ARRAY or a MAP are
# walked by one json_each per element row; a row whose path is not '$' reads the element only
# when it is an object (json_type() of non-JSON text fails).
_SCHEMA_MISMATCH = """(SELECT 'field ' || c.label || coalesce(' (key ' || c.key || ')', '')
            || ' must be ' || c.expects || '; got '
            || CASE WHEN c.ty IS NULL THEN 'nothing (the field is missing)'
                    WHEN c.ty IN ('integer', 'real', 'text') THEN c.ty || ' ' || CASE c.ty
                        WHEN 'text' THEN '"' || substr(c.x, 1, 38) || '"'
                        ELSE substr(CAST(c.x AS TEXT), 1, 40) END
                    WHEN c.ty = 'null' THEN 'null' ELSE 'a JSON ' || c.ty END
          FROM (SELECT f.seq, f.label, f.types, f.lo, f.hi, f.format, f.required, f.expects,
                       NULL AS key, json_type(CAST(NEW.value AS TEXT), f.path) AS ty,
                       json_extract(CAST(NEW.value AS TEXT), f.path) AS x,
                       json_type(CAST(NEW.value AS TEXT), f.parent) = 'object' AS parent_ok
                FROM sq_schema_fields f
                WHERE f.topic_id = s.topic_id AND f.version = s.version AND f.container IS NULL
                UNION ALL
                SELECT f.seq, f.label, f.types, f.lo, f.hi, f.format, f.required, f.expects,
                       e.key,
                       CASE WHEN f.path = '$' THEN e.type
                            WHEN e.type = 'object' THEN json_type(e.value, f.path) END,
                       CASE WHEN f.path = '$' THEN e.value
                            WHEN e.type = 'object' THEN json_extract(e.value, f.path) END,
                       CASE WHEN e.type != 'object' THEN 0 WHEN f.parent = '$' THEN 1
                            ELSE json_type(e.value, f.parent) = 'object' END
                FROM sq_schema_fields f, json_each(CAST(NEW.value AS TEXT), f.container) e
                WHERE f.topic_id = s.topic_id AND f.version = s.version
                  AND f.container IS NOT NULL
                  AND json_type(CAST(NEW.value AS TEXT), f.container) = f.container_type) c
          WHERE CASE WHEN c.ty IS NULL OR c.ty = 'null' THEN c.required AND c.parent_ok
                     WHEN instr(' ' || c.types || ' ', ' ' || c.ty || ' ') = 0 THEN 1
                     WHEN c.ty IN ('integer', 'real') AND c.lo IS NOT NULL
                         THEN NOT (c.x BETWEEN c.lo AND c.hi)
                     WHEN c.ty = 'text' AND c.format IS NOT NULL
                         THEN NOT EXISTS (SELECT 1 FROM sq_schema_formats g
                                          WHERE g.format = c.format AND c.x GLOB g.glob)
                     ELSE 0 END
          ORDER BY c.seq LIMIT 1)"""
# The topic's newest schema version, its on_invalid, and why NEW.value fails it (NULL: it fits).
_SCHEMA_VERDICT = """(SELECT s.version, s.on_invalid, CASE
            WHEN NEW.value IS NULL THEN NULL
            WHEN NOT json_valid(CAST(NEW.value AS TEXT))
                THEN 'the value is not JSON text, and the schema of the topic needs a JSON object'
            WHEN json_type(CAST(NEW.value AS TEXT)) != 'object'
                THEN 'the value is a JSON ' || json_type(CAST(NEW.value AS TEXT))
                     || ', and the schema of the topic needs a JSON object'
            ELSE """ + _SCHEMA_MISMATCH + """ END AS reason
          FROM sq_topic_schemas s
          WHERE s.topic_id = (SELECT id FROM sq_topics WHERE name = NEW.topic)
          ORDER BY s.version DESC LIMIT 1) m"""
_PUBLISH_SCHEMA = """    SELECT json_extract('{}', 'sq_publish: topic ' || NEW.topic || ' (schema version '
                           || m.version || '): ' || m.reason
                           || '. Nothing was published; publish a value that fits the schema (SELECT ddl FROM sq_topic_schemas), or change it: sqliteq topic schema set')
    FROM """ + _SCHEMA_VERDICT + """
    WHERE m.reason IS NOT NULL AND m.on_invalid = 'reject';
"""
# With on_invalid 'quarantine' the event goes to sq_quarantine instead, with the topic's next
# offset (where it would have gone) and writer 'sq_publish', and the topic's counter moves on.
# The event's own INSERT and the offset's UPDATE then do nothing: changes() is the row count
# of the trigger's previous statement (the counter's UPDATE: 1 when quarantined, else 0;
# the event's INSERT: 1 when stored), so the verdict is computed twice, not four times.
_PUBLISH_QUARANTINE = """    INSERT INTO sq_quarantine (topic_id, schema_version, next_offset, writer, batch_row,
                               ts_ms, key, value, value_type, headers, reason, quarantined_ms)
    SELECT t.id, m.version, t.next_offset, 'sq_publish', NULL,
           coalesce(NEW.ts_ms, CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)),
           NEW.key, NEW.value,
           coalesce(NEW.value_type, CASE typeof(NEW.value) WHEN 'blob' THEN 0 ELSE 1 END),
           NEW.headers, m.reason, CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
    FROM sq_topics t, """ + _SCHEMA_VERDICT + """
    WHERE t.name = NEW.topic AND m.reason IS NOT NULL AND m.on_invalid = 'quarantine';
    UPDATE sq_topics SET quarantined_total = quarantined_total + 1
    WHERE name = NEW.topic AND changes() = 1;
"""
# Version 4's write of the event and its offset, each run only when the statement before it
# says so (the same text plus a condition).
_STORE_UNLESS_QUARANTINED = (
    _PUBLISH_WRITE[_PUBLISH_WRITE.index("    INSERT INTO sq_events"):]
    .replace("FROM sq_topics WHERE name = NEW.topic;",
             "FROM sq_topics WHERE name = NEW.topic AND changes() = 0;", 1)
    .replace("next_offset + 1 WHERE name = NEW.topic;",
             "next_offset + 1 WHERE name = NEW.topic AND changes() = 1;", 1)
)
# Two triggers, told apart by their WHEN: a topic without a schema (every topic of a store
# that declares none) runs version 12's body as it was, at one index probe more; a topic
# with one runs the checks, the schema's verdict and the quarantine's chain (a topic with a
# schema exists, so it creates none). Where no topic has a schema the WHEN reads one page.
_HAS_SCHEMA = """(EXISTS (SELECT 1 FROM sq_topic_schemas) AND EXISTS (
    SELECT 1 FROM sq_topic_schemas
    WHERE topic_id = (SELECT id FROM sq_topics WHERE name = NEW.topic)))"""
PUBLISH_SCHEMA_SQL = (
    """
DROP TRIGGER sq_publish_insert;

CREATE TRIGGER sq_publish_insert INSTEAD OF INSERT ON sq_publish
WHEN NOT """ + _HAS_SCHEMA + """
BEGIN -- a topic without a schema: version 12's body
"""
    + _PUBLISH_CHECKS + _PUBLISH_LIMIT + _PUBLISH_WRITE + """END;

CREATE TRIGGER sq_publish_checked INSTEAD OF INSERT ON sq_publish
WHEN """ + _HAS_SCHEMA + """
BEGIN -- a topic with a schema
"""
    + _PUBLISH_CHECKS + _PUBLISH_LIMIT + _PUBLISH_SCHEMA + _PUBLISH_QUARANTINE
    + _STORE_UNLESS_QUARANTINED + "END;\n"
)
