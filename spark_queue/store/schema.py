"""The file format: tables, and forward-only migrations between versions.

A store is marked by ``PRAGMA application_id`` and versioned by
``PRAGMA user_version``. Each migration moves the file one version forward in
one transaction; a file newer than this code refuses to open. Published
migrations are never edited: a change of format is a new entry at the end.
"""

from __future__ import annotations

import apsw

from spark_queue.errors import NotAStoreError, SchemaVersionError, StoreError
from spark_queue.store.connection import write_transaction

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

MIGRATIONS: list[str] = [_V1_STREAMS]


def latest_version() -> int:
    return len(MIGRATIONS)


def _pragma_int(conn: apsw.Connection, name: str) -> int:
    return int(conn.execute(f"PRAGMA {name}").fetchall()[0][0])


def _user_tables(conn: apsw.Connection) -> int:
    return conn.execute(
        "SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'"
    ).fetchall()[0][0]


def ensure_schema(conn: apsw.Connection, path: str, *, readonly: bool = False) -> int:
    """Check the file is a store of a version we read; migrate it forward. Returns the version."""
    app_id = _pragma_int(conn, "application_id")
    version = _pragma_int(conn, "user_version")
    if app_id != APPLICATION_ID and not (app_id == 0 and _user_tables(conn) == 0):
        raise NotAStoreError(
            f"{path!r} is a SQLite database but not a spark_queue store "
            f"(application_id={app_id}); point to a store file or a new path."
        )
    if version > latest_version():
        raise SchemaVersionError(
            f"store {path!r} has schema version {version}, newer than this spark_queue "
            f"understands ({latest_version()}); upgrade spark_queue to open it."
        )
    if version < latest_version():
        if readonly:
            raise StoreError(
                f"store {path!r} needs migrating from schema version {version} to "
                f"{latest_version()}; open it once read-write."
            )
        _migrate(conn)
    return latest_version()


def _migrate(conn: apsw.Connection) -> None:
    while True:
        with write_transaction(conn):
            # Re-read inside the write lock: another process may have migrated
            # the file between our check and this transaction.
            version = _pragma_int(conn, "user_version")
            if version >= latest_version():
                return
            conn.execute(MIGRATIONS[version])
            conn.execute(f"PRAGMA application_id={APPLICATION_ID:d}")
            conn.execute(f"PRAGMA user_version={version + 1:d}")
