"""The store's key-value table ``sq_meta``: every key it holds, and its only reads and writes.

One row per store-wide fact that fits no table of its own (created by schema version 1,
:mod:`spark_queue.store.file.schema`). Its owners write their values through this module
and know nothing of the table; what a value means stays with its owner:

- ``store_id``: the store's identity (:mod:`spark_queue.store.file.identity`);
- ``replica_*``: the replica a store is marked as replicated to, and its cycles and mark
  (:mod:`spark_queue.store.file.replica_mark`), its replicator
  (:mod:`spark_queue.store.file.replicator_lease`);
- ``housekeeping_*``: the store-wide interval, the last run and the lease
  (:mod:`spark_queue.store.floor.housekeeping`);
- ``create_topics_on_publish`` (``0``: a publish to a missing topic is refused) and
  ``creating_topic`` (the topic being created when asked, while that is off; only inside
  the creating transaction): :mod:`spark_queue.store.streams.topic_creation`;
- ``sink_checkpoint/<location>``: the ledger entry a sink without ``sinkId`` writes under
  for the Spark checkpoint at that location (:mod:`spark_queue.store.file.sink_checkpoints`);
- ``mirror_shift/<topic>`` and ``mirror_lease/<hold>``: a Kafka copy's offset shift and
  its exporter's lease (:mod:`spark_queue.store.streams.mirrors`,
  :mod:`spark_queue.store.streams.mirror_lease`).

Every function runs in the caller's transaction. A value is text; another SQLite client
may have written anything there, so the owner parses it and says what to do when it
cannot.
"""

from __future__ import annotations

import json
from typing import Any

import apsw

#: The table's name, for messages that tell a user which row to repair.
TABLE = "sq_meta"

STORE_ID = "store_id"

REPLICA_URL = "replica_url"
REPLICA_CYCLE_BEGUN = "replica_cycle_begun"
REPLICA_CYCLE_DONE = "replica_cycle_done"
REPLICA_MARK = "replica_mark"
REPLICA_SYNCED_MS = "replica_synced_ms"
REPLICA_MARK_BORN = "replica_mark_born"
#: Who replicates the store, and what the last replicator that stopped on an error said
#: (:mod:`spark_queue.store.file.replicator_lease`).
REPLICA_REPLICATOR = "replica_replicator"
REPLICA_GAVE_UP = "replica_gave_up"
#: Every key of a store's replica: forgetting the replica deletes them all.
REPLICA_KEYS = (REPLICA_URL, REPLICA_CYCLE_BEGUN, REPLICA_CYCLE_DONE, REPLICA_MARK,
                REPLICA_SYNCED_MS, REPLICA_MARK_BORN, REPLICA_REPLICATOR, REPLICA_GAVE_UP)

HOUSEKEEPING_INTERVAL_MS = "housekeeping_interval_ms"
HOUSEKEEPING_LAST_RUN_KEY = "housekeeping_last_run"
HOUSEKEEPING_LEASE = "housekeeping_lease"

CREATE_TOPICS_ON_PUBLISH = "create_topics_on_publish"
CREATING_TOPIC = "creating_topic"

_MIRROR_SHIFT = "mirror_shift/"
_MIRROR_LEASE = "mirror_lease/"


_SINK_CHECKPOINT = "sink_checkpoint/"


def sink_checkpoint_key(location: str) -> str:
    """The key of the sink ledger entry recorded for the checkpoint at ``location``."""
    return _SINK_CHECKPOINT + location


def mirror_shift_key(topic: str) -> str:
    """The key of ``topic``'s Kafka copy's offset shift (``topic`` already validated)."""
    return _MIRROR_SHIFT + topic


def mirror_lease_key(hold: str) -> str:
    """The key of the exporter's lease on the copy whose position is consumer ``hold``."""
    return _MIRROR_LEASE + hold


def get(conn: apsw.Connection, key: str) -> str | None:
    """The value of ``key`` as stored (its text; another client's value as ``str``), or
    None when the row is absent."""
    row = conn.execute("SELECT value FROM sq_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def get_json(conn: apsw.Connection, key: str) -> dict[str, Any] | None:
    """The JSON object stored under ``key``; None when absent, or when another client wrote
    something that is no JSON object (as if absent: the owner's next write replaces it)."""
    text = get(conn, key)
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def has(conn: apsw.Connection, key: str) -> bool:
    """Whether ``key`` has a row; False too in a file that is no store yet (no table), so
    a connection can ask before the schema is made."""
    try:
        return conn.execute("SELECT 1 FROM sq_meta WHERE key = ?", (key,)).fetchone() is not None
    except apsw.SQLError:
        return False


def exists(conn: apsw.Connection) -> bool:
    """Whether the file holds the table yet (a file being created does not)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sq_meta'").fetchone()
    return found is not None


def put(conn: apsw.Connection, key: str, value: str) -> None:
    """Store ``value`` under ``key``, replacing what was there (a write transaction)."""
    conn.execute("INSERT OR REPLACE INTO sq_meta (key, value) VALUES (?, ?)", (key, value))


def put_json(conn: apsw.Connection, key: str, value: dict[str, Any]) -> None:
    """Store ``value`` as JSON under ``key`` (a write transaction)."""
    put(conn, key, json.dumps(value))


def add(conn: apsw.Connection, key: str, value: str) -> None:
    """Store ``value`` under a ``key`` that has no row (a write transaction); a row already
    there fails the statement (apsw.ConstraintError)."""
    conn.execute("INSERT INTO sq_meta (key, value) VALUES (?, ?)", (key, value))


def drop(conn: apsw.Connection, *keys: str) -> None:
    """Delete the rows of ``keys`` (absent ones are no error; a write transaction)."""
    conn.executemany("DELETE FROM sq_meta WHERE key = ?", [(key,) for key in keys])
