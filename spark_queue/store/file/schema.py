"""The file format: tables, and forward-only migrations between versions.

A store is marked by ``PRAGMA application_id`` and versioned by
``PRAGMA user_version``. Opening migrates every pending version forward in one
transaction; a file newer than this code refuses to open. Published
migrations are never edited: a change of format is a new entry at the end,
and entries only add (tables, columns with defaults, views, triggers) or drop
an index nothing needs for meaning (version 6: ``sq_events_ts``), so a client
written for version N keeps working on a later file.
"""

from __future__ import annotations

from typing import NamedTuple

import apsw

from spark_queue import defaults
from spark_queue.errors import (
    NotAStoreError,
    SchemaVersionError,
    StoreError,
    StoreNotCreatedError,
)
from spark_queue.store.file.connection import (
    enable_wal,
    first_value,
    read_transaction,
    write_transaction,
)
from spark_queue.store.file.offset_views import OFFSET_VIEWS_SQL as _V13_OFFSET_VIEWS
from spark_queue.store.file.publish_view import ENQUEUE_VIEW_SQL as _V9_ENQUEUE_VIEW
from spark_queue.store.file.publish_view import PUBLISH_LIMIT_SQL as _V12_PUBLISH_LIMIT
from spark_queue.store.file.publish_view import PUBLISH_SCHEMA_SQL as _V14_PUBLISH_SCHEMA
from spark_queue.store.file.publish_view import PUBLISH_VIEW_SQL as _V4_PUBLISH_VIEW
from spark_queue.store.file.sqlite_errors import open_errors
from spark_queue.store.file.topic_guard import TOPIC_GUARD_SQL as _V15_TOPIC_CREATION

# "SQLQ" in ASCII: tells our files apart from any other SQLite database.
APPLICATION_ID = 0x53514C51

_V1_STREAMS = """
CREATE TABLE sq_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE sq_topics (
    id             INTEGER PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    next_offset    INTEGER NOT NULL DEFAULT 0 CHECK (next_offset >= 0),
    created_ms     INTEGER NOT NULL,
    retention_ms   INTEGER CHECK (retention_ms IS NULL OR retention_ms > 0),
    retention_rows INTEGER CHECK (retention_rows IS NULL OR retention_rows > 0)
);

-- value_type: 0 = bytes (BLOB), 1 = text, 2 = JSON text. key and value are
-- declared BLOB for "no affinity": SQLite keeps each value exactly as bound
-- (a column declared ANY would turn the JSON text '0' into the integer 0).
CREATE TABLE sq_events (
    topic_id   INTEGER NOT NULL REFERENCES sq_topics(id) ON DELETE CASCADE,
    offset     INTEGER NOT NULL,
    ts_ms      INTEGER NOT NULL,
    key        BLOB,
    value      BLOB,
    value_type INTEGER NOT NULL CHECK (value_type IN (0, 1, 2)),
    headers    TEXT,
    PRIMARY KEY (topic_id, offset)
) WITHOUT ROWID;

CREATE INDEX sq_events_ts ON sq_events (topic_id, ts_ms);

CREATE TABLE sq_consumers (
    consumer    TEXT NOT NULL,
    topic_id    INTEGER NOT NULL REFERENCES sq_topics(id) ON DELETE CASCADE,
    next_offset INTEGER NOT NULL CHECK (next_offset >= 0),
    updated_ms  INTEGER NOT NULL,
    PRIMARY KEY (consumer, topic_id)
) WITHOUT ROWID;

CREATE TABLE sq_sink_commits (
    sink_id       TEXT PRIMARY KEY,
    last_batch_id INTEGER NOT NULL,
    rows          INTEGER NOT NULL,
    updated_ms    INTEGER NOT NULL
) WITHOUT ROWID;
"""

# Queues (spark_queue/store/queues/queue_jobs.py). A job row is due when available_at <=
# now, and leased while lease_token is set and lease_expires_at is later. A
# claim leaves the indexed columns alone (no index write), and an expired
# lease is claimable again by the same index scan, with no reaper.
# ``value`` is declared BLOB (no affinity): a non-STRICT column declared ANY
# has NUMERIC affinity and would turn the text payload "123" into an integer.
_V2_QUEUES = """
CREATE TABLE sq_queues (
    id                    INTEGER PRIMARY KEY,
    name                  TEXT NOT NULL UNIQUE,
    created_ms            INTEGER NOT NULL,
    visibility_timeout_ms INTEGER NOT NULL DEFAULT 30000 CHECK (visibility_timeout_ms > 0),
    max_attempts          INTEGER NOT NULL DEFAULT 5 CHECK (max_attempts > 0),
    backoff_base_ms       INTEGER NOT NULL DEFAULT 1000 CHECK (backoff_base_ms >= 0),
    backoff_cap_ms        INTEGER NOT NULL DEFAULT 300000 CHECK (backoff_cap_ms >= 0),
    max_size              INTEGER CHECK (max_size IS NULL OR max_size > 0),
    idempotency_window_ms INTEGER NOT NULL DEFAULT 86400000 CHECK (idempotency_window_ms > 0)
);

-- AUTOINCREMENT: a job id is never reused, so (id, lease_token) fences for good.
CREATE TABLE sq_jobs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    queue_id        INTEGER NOT NULL REFERENCES sq_queues(id) ON DELETE CASCADE,
    priority        INTEGER NOT NULL DEFAULT 0,
    available_at    INTEGER NOT NULL,
    lease_token     INTEGER,
    lease_expires_at INTEGER,
    attempts        INTEGER NOT NULL DEFAULT 0,
    max_attempts    INTEGER CHECK (max_attempts IS NULL OR max_attempts > 0),
    expires_at      INTEGER,
    idempotency_key TEXT,
    enqueued_ms     INTEGER NOT NULL,
    value           BLOB,
    value_type      INTEGER NOT NULL CHECK (value_type IN (0, 1, 2)),
    last_error      TEXT
);

CREATE INDEX sq_jobs_claim ON sq_jobs (queue_id, priority DESC, available_at);
CREATE INDEX sq_jobs_expiry ON sq_jobs (queue_id, expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE sq_dead_jobs (
    id              INTEGER PRIMARY KEY,
    queue_id        INTEGER NOT NULL REFERENCES sq_queues(id) ON DELETE CASCADE,
    priority        INTEGER NOT NULL,
    attempts        INTEGER NOT NULL,
    max_attempts    INTEGER,
    expires_at      INTEGER,
    idempotency_key TEXT,
    enqueued_ms     INTEGER NOT NULL,
    dead_ms         INTEGER NOT NULL,
    value           BLOB,
    value_type      INTEGER NOT NULL CHECK (value_type IN (0, 1, 2)),
    last_error      TEXT
);

CREATE INDEX sq_dead_jobs_queue ON sq_dead_jobs (queue_id, dead_ms);

-- Idempotency keys outlive their jobs: a key is remembered for the queue's
-- idempotency_window_ms after enqueue, and as long as its job is queued or dead.
CREATE TABLE sq_job_keys (
    queue_id        INTEGER NOT NULL REFERENCES sq_queues(id) ON DELETE CASCADE,
    idempotency_key TEXT NOT NULL,
    job_id          INTEGER NOT NULL,
    created_ms      INTEGER NOT NULL,
    PRIMARY KEY (queue_id, idempotency_key)
) WITHOUT ROWID;

CREATE INDEX sq_job_keys_age ON sq_job_keys (queue_id, created_ms);
"""

# Queue and topic controls (spark_queue/store/queues/controls.py, file/payload_limits.py).
# The token bucket's state (rate_tokens, rate_updated_ms) lives in the queue's
# row so every worker process shares one bucket. sq_queue_leases holds the ids
# of jobs a claim leased in a queue with max_leased: a superset of the queue's
# live leases, so the cap is counted from a handful of rows instead of a scan
# of the queue, and queues without a cap never touch it (no cost on their claim
# or ack). No foreign key on job_id: acks must not pay for a lookup here.
_V3_CONTROLS = """
ALTER TABLE sq_queues ADD COLUMN paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1));
ALTER TABLE sq_queues ADD COLUMN max_leased INTEGER
    CHECK (max_leased IS NULL OR max_leased > 0);
ALTER TABLE sq_queues ADD COLUMN rate_limit_per_s REAL
    CHECK (rate_limit_per_s IS NULL OR rate_limit_per_s > 0);
ALTER TABLE sq_queues ADD COLUMN rate_burst INTEGER CHECK (rate_burst IS NULL OR rate_burst > 0);
ALTER TABLE sq_queues ADD COLUMN rate_tokens REAL;
ALTER TABLE sq_queues ADD COLUMN rate_updated_ms INTEGER;
ALTER TABLE sq_queues ADD COLUMN max_payload_bytes INTEGER
    CHECK (max_payload_bytes IS NULL OR max_payload_bytes > 0);
ALTER TABLE sq_topics ADD COLUMN max_payload_bytes INTEGER
    CHECK (max_payload_bytes IS NULL OR max_payload_bytes > 0);

CREATE TABLE sq_queue_leases (
    queue_id INTEGER NOT NULL REFERENCES sq_queues(id) ON DELETE CASCADE,
    job_id   INTEGER NOT NULL,
    PRIMARY KEY (queue_id, job_id)
) WITHOUT ROWID;
"""

# Workers (spark_queue/store/queues/queue_workers.py) and queue counters. One row per running
# worker, written at its start, refreshed at each heartbeat with the jobs it holds,
# deleted when it stops. A row past expires_ms is a worker that died without stopping. An operator's
# view only: leases never depend on it.
_V5_WORKERS = """
CREATE TABLE sq_workers (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    queue_id    INTEGER NOT NULL REFERENCES sq_queues(id) ON DELETE CASCADE,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    concurrency INTEGER NOT NULL,
    started_ms  INTEGER NOT NULL,
    seen_ms     INTEGER NOT NULL,
    expires_ms  INTEGER NOT NULL,
    jobs_held   INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX sq_workers_queue ON sq_workers (queue_id, expires_ms);

-- Counters for rates (spark_queue/metrics.py): jobs acked, nacked (failed) and moved to
-- the dead letters, added to inside the transaction that does it, one row update per
-- transaction. Only spark_queue's own ack/nack/claim count; a client writing the tables
-- with its own SQL does not.
ALTER TABLE sq_queues ADD COLUMN acked_total INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sq_queues ADD COLUMN failed_total INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sq_queues ADD COLUMN dead_total INTEGER NOT NULL DEFAULT 0;
"""

# Time marks (spark_queue/store/streams/time_marks.py) in place of the index on
# (topic_id, ts_ms): one row per run of at least 4096 events with the topic's running
# maximum timestamp, where the index cost a second B-tree insert per event. The
# existing events get their marks here, a run per 4096 offsets; the index goes last.
_V6_TIME_MARKS = """
CREATE TABLE sq_time_marks (
    topic_id   INTEGER NOT NULL REFERENCES sq_topics(id) ON DELETE CASCADE,
    offset     INTEGER NOT NULL,
    end_offset INTEGER NOT NULL CHECK (end_offset > offset),
    max_ts_ms  INTEGER NOT NULL,
    PRIMARY KEY (topic_id, offset)
) WITHOUT ROWID;

CREATE INDEX sq_time_marks_ts ON sq_time_marks (topic_id, max_ts_ms, offset);

INSERT INTO sq_time_marks (topic_id, offset, end_offset, max_ts_ms)
SELECT topic_id, min(offset), max(offset) + 1,
       max(max(ts_ms)) OVER (PARTITION BY topic_id ORDER BY min(offset)
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
FROM sq_events GROUP BY topic_id, offset / 4096;

DROP INDEX sq_events_ts;
"""

# The store's identity (spark_queue/store/file/identity.py): a random id, written once, so a
# Spark checkpoint can tell this file from another at the same path (a store re-created
# after a cluster restart wiped the driver's disk). Every store gets one here, new or
# migrated; a copy (`sqliteq backup`, cp) keeps it, a re-created store gets a new one.
_V7_STORE_ID = """
INSERT INTO sq_meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))));
"""

# Dead-letter retention (spark_queue/store/queues/dead_retention.py): applied by
# housekeeping, NULL keeps dead letters until requeued or purged.
_V8_DEAD_LETTER_RETENTION = """
ALTER TABLE sq_queues ADD COLUMN dead_retention_ms INTEGER
    CHECK (dead_retention_ms IS NULL OR dead_retention_ms > 0);
ALTER TABLE sq_queues ADD COLUMN dead_retention_rows INTEGER
    CHECK (dead_retention_rows IS NULL OR dead_retention_rows > 0);
"""

# Positions of the queries reading under one consumer name
# (spark_queue/store/streams/consumer_positions.py): one row per query (``reader``, an id
# the source carries in its checkpointed offsets), so two queries sharing a name each hold
# retention at their own position. ``confirmed`` is 0 from a query's start until Spark
# has checkpointed an offset naming the reader: such a row holds retention only while its
# planning process keeps it fresh (a start killed before its first checkpoint leaves no
# hold for good). sq_consumers keeps the name's offset, the lowest of its positions.
_V10_CONSUMER_POSITIONS = """
CREATE TABLE sq_consumer_positions (
    consumer    TEXT NOT NULL,
    topic_id    INTEGER NOT NULL REFERENCES sq_topics(id) ON DELETE CASCADE,
    reader      TEXT NOT NULL,
    next_offset INTEGER NOT NULL CHECK (next_offset >= 0),
    updated_ms  INTEGER NOT NULL,
    confirmed   INTEGER NOT NULL DEFAULT 0 CHECK (confirmed IN (0, 1)),
    PRIMARY KEY (consumer, topic_id, reader)
) WITHOUT ROWID;

CREATE INDEX sq_consumer_positions_topic ON sq_consumer_positions (topic_id, next_offset);
"""

# Batches a streaming query planned (spark_queue/store/streams/planned_batches.py): the
# end its source chose for each start, keyed by the query (``reader``) and the start
# (``{topic: offset}`` as JSON text), so a batch Spark plans again after a power cut tore
# its checkpoint entry covers the range its sink's ledger already holds. A few per query.
_V11_PLANNED_BATCHES = """
CREATE TABLE sq_planned_batches (
    reader        TEXT NOT NULL,
    start_offsets TEXT NOT NULL,
    consumer      TEXT NOT NULL,
    end_offsets   TEXT NOT NULL,
    planned_ms    INTEGER NOT NULL,
    PRIMARY KEY (reader, start_offsets)
) WITHOUT ROWID;

CREATE INDEX sq_planned_batches_age ON sq_planned_batches (reader, planned_ms);
CREATE INDEX sq_planned_batches_consumer ON sq_planned_batches (consumer, reader);
"""

# Topic schemas (spark_queue/store/streams/topic_schemas.py): each version of a topic's schema
# (Spark DDL), the offset from which events were checked against it (``from_offset``: the
# topic's next offset when it was set, in the same write transaction, so an event's version
# is the newest whose from_offset is at or below its offset, and sq_events pays nothing per
# event; docs/schemas.md has the query), and its flattened check
# (sq_schema_fields: store/streams/schema_rows.py), which the sq_publish trigger reads as
# data. sq_schema_formats holds the GLOBs of DATE and TIMESTAMP strings (schema_rows.FORMATS).
_V14_TOPIC_SCHEMAS = """
CREATE TABLE sq_topic_schemas (
    topic_id      INTEGER NOT NULL REFERENCES sq_topics(id) ON DELETE CASCADE,
    version       INTEGER NOT NULL CHECK (version >= 1),
    ddl           TEXT NOT NULL,
    on_invalid    TEXT NOT NULL DEFAULT 'reject' CHECK (on_invalid IN ('reject', 'quarantine')),
    compatibility TEXT NOT NULL DEFAULT 'backward' CHECK (compatibility IN ('backward', 'none')),
    from_offset   INTEGER NOT NULL CHECK (from_offset >= 0),
    created_ms    INTEGER NOT NULL,
    PRIMARY KEY (topic_id, version)
) WITHOUT ROWID;

CREATE TABLE sq_schema_fields (
    topic_id       INTEGER NOT NULL,
    version        INTEGER NOT NULL,
    seq            INTEGER NOT NULL,
    label          TEXT NOT NULL,
    container      TEXT,
    container_type TEXT CHECK (container_type IN ('array', 'object')),
    path           TEXT NOT NULL,
    parent         TEXT NOT NULL,
    types          TEXT NOT NULL,
    lo             REAL,
    hi             REAL,
    format         TEXT,
    required       INTEGER NOT NULL CHECK (required IN (0, 1)),
    expects        TEXT NOT NULL,
    PRIMARY KEY (topic_id, version, seq),
    FOREIGN KEY (topic_id, version) REFERENCES sq_topic_schemas (topic_id, version)
        ON DELETE CASCADE
) WITHOUT ROWID;

-- Events a topic whose schema says on_invalid 'quarantine' kept aside: the stored columns as
-- the writer gave them, why they failed, against which version, the topic's next offset then
-- (where the event would have gone), the writer ('python' or 'sq_publish') and its batch row.
-- quarantined_total counts them for the metric; purging the table does not lower it.
CREATE TABLE sq_quarantine (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    topic_id       INTEGER NOT NULL REFERENCES sq_topics(id) ON DELETE CASCADE,
    schema_version INTEGER NOT NULL,
    next_offset    INTEGER NOT NULL,
    writer         TEXT NOT NULL,
    batch_row      INTEGER,
    ts_ms          INTEGER NOT NULL,
    key            BLOB,
    value          BLOB,
    value_type     INTEGER NOT NULL CHECK (value_type IN (0, 1, 2)),
    headers        TEXT,
    reason         TEXT NOT NULL,
    quarantined_ms INTEGER NOT NULL
);

CREATE INDEX sq_quarantine_topic ON sq_quarantine (topic_id, id);

ALTER TABLE sq_topics ADD COLUMN quarantined_total INTEGER NOT NULL DEFAULT 0;

CREATE TABLE sq_schema_formats (
    format TEXT NOT NULL,
    glob   TEXT NOT NULL,
    PRIMARY KEY (format, glob)
) WITHOUT ROWID;

INSERT INTO sq_schema_formats (format, glob) VALUES
    ('date', '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]'),
    ('timestamp', '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]'),
    ('timestamp', '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9][T ][0-2][0-9]:[0-5][0-9]'),
    ('timestamp', '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9][T ][0-2][0-9]:[0-5][0-9][:.Z+-]*');
"""

MIGRATIONS: list[str] = [
    _V1_STREAMS, _V2_QUEUES, _V3_CONTROLS, _V4_PUBLISH_VIEW, _V5_WORKERS, _V6_TIME_MARKS,
    _V7_STORE_ID, _V8_DEAD_LETTER_RETENTION, _V9_ENQUEUE_VIEW, _V10_CONSUMER_POSITIONS,
    _V11_PLANNED_BATCHES, _V12_PUBLISH_LIMIT, _V13_OFFSET_VIEWS,
    _V14_TOPIC_SCHEMAS + _V14_PUBLISH_SCHEMA, _V15_TOPIC_CREATION,
]
#: The first file version with topic schemas: an older file read as it is has none.
TOPIC_SCHEMAS_VERSION = MIGRATIONS.index(_V14_TOPIC_SCHEMAS + _V14_PUBLISH_SCHEMA) + 1


def latest_version() -> int:
    return len(MIGRATIONS)


class FileState(NamedTuple):
    """What the header and schema of a file say, read in one transaction."""

    application_id: int
    user_version: int
    tables: int

    @property
    def is_store(self) -> bool:
        return self.application_id == APPLICATION_ID

    @property
    def is_empty(self) -> bool:
        return self.application_id == 0 and self.user_version == 0 and self.tables == 0


def read_state(conn: apsw.Connection) -> FileState:
    """The application id, version and table count from ONE snapshot of the file.

    Read apart, another process creating the store between the statements
    could show an id of 0 next to its new tables (a spurious "not a store").
    """
    with read_transaction(conn):
        app_id = first_value(conn.execute("PRAGMA application_id"))
        version = first_value(conn.execute("PRAGMA user_version"))
        tables = first_value(
            conn.execute("SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'")
        )
    return FileState(int(app_id), int(version), int(tables))


def readable_version(conn: apsw.Connection, path: str) -> int:
    """The schema version of a store file opened read-only, migrating nothing: refuses a
    file that is not a store, an empty one and a newer version (the backup of a store
    written by an older release reads it as it is)."""
    with open_errors(path):
        state = read_state(conn)
    _refuse_foreign(state, path)
    if state.is_empty:
        raise StoreNotCreatedError(
            f"{path!r} holds no store yet: it is an empty SQLite file (a store being "
            f"created, or a file made by another tool); create it with `sqliteq init {path}`."
        )
    return state.user_version


def _refuse_foreign(state: FileState, path: str) -> None:
    if not (state.is_store or state.is_empty):
        raise NotAStoreError(
            f"{path!r} is a SQLite database but not a spark_queue store "
            f"(application_id={state.application_id}, {state.tables} tables); it was left "
            "untouched. Point to a store file or a new path."
        )
    if state.user_version > latest_version():
        raise SchemaVersionError(
            f"store {path!r} has schema version {state.user_version}, newer than this "
            f"spark_queue understands ({latest_version()}); upgrade spark_queue to open it."
        )


def needs_migrating(path: str, version: int) -> str:
    """What a read-only open (``tail``, ``topics``, ``check``) says of a store an older release
    wrote: it must be opened read-write once, and how."""
    return (
        f"store {path!r} needs migrating from schema version {version} to "
        f"{latest_version()}; open it once read-write (e.g. `sqliteq init {path}`)."
    )


def ensure_schema(
    conn: apsw.Connection,
    path: str,
    *,
    readonly: bool = False,
    busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS,
) -> int:
    """Check the file is a store (or new and empty) before writing anything to it; then
    switch it to WAL and migrate it forward in one transaction. Returns the version.

    Safe with any number of processes opening the same new path at once: every
    step waits for the lock, and the migration re-reads the file's state inside
    its write transaction (``tests/store/file/test_open.py``).
    """
    with open_errors(path):
        state = read_state(conn)
    _refuse_foreign(state, path)
    if readonly:
        if state.is_empty:
            raise StoreNotCreatedError(
                f"{path!r} holds no store yet: it is an empty SQLite file (a store being "
                f"created, or a file made by another tool); create it with `sqliteq init {path}`."
            )
        if state.user_version < latest_version():
            raise StoreError(needs_migrating(path, state.user_version))
        return state.user_version
    enable_wal(conn, path, busy_timeout_ms)
    if state.user_version < latest_version():
        with open_errors(path):
            _migrate(conn, path)
    return latest_version()


def _migrate(conn: apsw.Connection, path: str) -> None:
    # All pending versions in ONE transaction: a crash leaves the old version
    # whole, and a process that waited for the lock finds the work done.
    with write_transaction(conn):
        state = read_state(conn)
        _refuse_foreign(state, path)
        if state.user_version == latest_version():
            return  # another process migrated it while we waited for the lock
        for version in range(state.user_version, latest_version()):
            conn.execute(MIGRATIONS[version])
            conn.execute(f"PRAGMA user_version={version + 1:d}")
        conn.execute(f"PRAGMA application_id={APPLICATION_ID:d}")
