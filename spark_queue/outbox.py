"""Publish, enqueue and save offsets in YOUR transaction, from Python's standard ``sqlite3``
or SQLAlchemy (a Flask, FastAPI or Django service's own connection to the store's file).

These helpers run the SQL protocol of docs/file-format.md (the ``sq_publish`` and
``sq_enqueue`` views, whose triggers check every row) on the connection you pass, so an
event or a job commits or rolls back with your business rows::

    from spark_queue import outbox

    conn = outbox.connect("app.sqlite")              # sqlite3, with the protocol's settings
    with conn:                                    # one transaction: commit, or roll back
        conn.execute("INSERT INTO orders (id, total) VALUES (?, ?)", (7, 120))
        outbox.publish(conn, "orders", {"id": 7, "total": 120})
        outbox.enqueue(conn, "emails", {"order": 7}, idempotency_key="order-7")

``conn`` is a ``sqlite3.Connection`` or cursor, a SQLAlchemy ``Connection`` or an ORM
``Session`` (its current connection). :func:`connect` opens a ``sqlite3`` connection with
the protocol's per-connection settings; :func:`prepare` applies them to one you opened.

On a replicated store (``sqliteq replicate``) a connection must never checkpoint the WAL:
Litestream alone does, and an application's checkpoint racing its sync ships a replica whose
restore is damaged (docs/replication.md, "Other clients' checkpoints"). :func:`prepare` sets
``PRAGMA wal_autocheckpoint = 0`` there, and :func:`publish` and :func:`enqueue` set it on
their connection whenever the store is replicated, so a connection opened before the store
was marked stops checkpointing at its first outbox call.

This module imports only the standard library (``sqlite3`` only inside :func:`connect`),
never apsw or SQLAlchemy: load it in processes that use another SQLite library, and never
load that library in a process holding apsw connections (docs/transactions.md).
Claiming and acknowledging jobs stay in Python (``spark_queue.Worker``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from spark_queue.job_options import JOB_OPTION_NAMES, JobOptions

if TYPE_CHECKING:
    import sqlite3

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode

_PUBLISH = ("INSERT INTO sq_publish (topic, key, value, value_type, headers, ts_ms) "
            "VALUES (?, ?, ?, ?, ?, ?)")
_LAST_OFFSET = "SELECT next_offset - 1 FROM sq_topics WHERE name = ?"
_ENQUEUE = ("INSERT INTO sq_enqueue (queue, payload, payload_type, priority, delay_ms, ttl_ms, "
            "idempotency_key, max_attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_JOB_BY_KEY = ("SELECT k.job_id FROM sq_job_keys k JOIN sq_queues q ON q.id = k.queue_id "
               "WHERE q.name = ? AND k.idempotency_key = ?")
_LAST_JOB = "SELECT seq FROM sqlite_sequence WHERE name = 'sq_jobs'"
# docs/file-format.md, "Save a consumer offset": the view whose trigger keeps the rule for
# every client, Store.commit_offsets included (never back, never past the readable end).
_SAVE_OFFSET = "INSERT INTO sq_save_offset (consumer, topic, next_offset) VALUES (?, ?, ?)"
_SAVED = ("SELECT c.next_offset FROM sq_consumers c JOIN sq_topics t ON t.id = c.topic_id "
          "WHERE c.consumer = ? AND t.name = ?")
# docs/file-format.md, "Per-connection settings".
_FOREIGN_KEYS = "PRAGMA foreign_keys = ON"
_SYNC_NORMAL = "PRAGMA synchronous = NORMAL"
_REPLICATED = "SELECT count(*) FROM sq_meta WHERE key = 'replica_url'"
_NO_CHECKPOINTS = "PRAGMA wal_autocheckpoint = 0"
_CONNECT_TIMEOUT_S = 5.0  # the protocol's busy_timeout: wait for the write lock, then fail


def connect(path: str, **kwargs: Any) -> sqlite3.Connection:
    """A ``sqlite3`` connection to the store at ``path`` with the protocol's per-connection
    settings: :func:`prepare`'s, and ``synchronous = NORMAL``, the store's default
    durability (sqlite3's FULL fsyncs every commit; set FULL on the connection to have
    that). ``kwargs`` go to ``sqlite3.connect`` (``timeout`` defaults to 5 s, the protocol's
    busy timeout)."""
    import sqlite3  # here: importing this module loads no SQLite library (see above)

    kwargs.setdefault("timeout", _CONNECT_TIMEOUT_S)
    conn = sqlite3.connect(path, **kwargs)
    try:
        conn.execute(_SYNC_NORMAL)
        prepare(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def prepare(conn: Any) -> bool:
    """Apply the protocol's per-connection settings to ``conn`` (a ``sqlite3`` connection,
    a SQLAlchemy ``Connection`` or ``Session``): ``foreign_keys`` on and, when the store is
    replicated, ``wal_autocheckpoint = 0`` (the replicator's Litestream alone checkpoints);
    ``synchronous`` stays yours (NORMAL or FULL).
    Call it right after connecting, before a transaction: SQLite ignores the foreign-keys
    pragma inside one. True when the store is replicated."""
    _run(conn, _FOREIGN_KEYS, ())
    return _leave_checkpoints(conn)


def _leave_checkpoints(conn: Any) -> bool:
    """On a replicated store, stop ``conn`` from checkpointing (a connection setting, which
    holds inside a transaction too and for the connection's life); True if replicated."""
    replicated = bool(_one(conn, _REPLICATED, ()))
    if replicated:
        _run(conn, _NO_CHECKPOINTS, ())
    return replicated


def publish(
    conn: Any, topic: str, value: Any, *, key: str | bytes | None = None,
    headers: Mapping[str, str] | None = None, timestamp_ms: int | None = None,
) -> int:
    """Append one event to ``topic`` (created if new) in ``conn``'s transaction; its offset.

    ``value`` is stored as ``Store.publish`` stores it: str as text, bytes (or None) as
    bytes, anything else as JSON. The offset is exact inside a transaction (the INSERT took
    the write lock, which it holds until your commit); in autocommit mode it may name a
    later event. A row breaking a rule raises your library's error with a message starting
    ``sq_publish:``.
    """
    stored, value_type = _encode(value, text_type=1)
    stored_headers = None if headers is None else _dumps(dict(headers))
    _run(conn, _PUBLISH, (topic, key, stored, value_type, stored_headers, timestamp_ms))
    # After the write, which took the lock (a read first would make a deferred transaction
    # fail at once beside another writer); a checkpoint could only come at the commit.
    _leave_checkpoints(conn)
    return int(_one(conn, _LAST_OFFSET, (topic,)))


def enqueue(conn: Any, queue: str, payload: Any, **options: Unpack[JobOptions]) -> int:
    """Enqueue one job into the existing ``queue`` in ``conn``'s transaction; its id.

    The payload is stored as ``Queue.enqueue`` stores it (str as text, bytes or None as
    bytes, anything else as JSON); the queue's settings apply (``max_payload_bytes``,
    ``max_size``). A duplicate ``idempotency_key`` inserts nothing, does not fail your
    transaction, and returns the original job's id. A refusal (unknown queue, a payload
    over the limit, a negative delay, ...) raises your library's error with a message
    starting ``sq_enqueue:`` and naming the field; nothing of the call is written.
    """
    unknown = sorted(set(options) - set(JOB_OPTION_NAMES))
    if unknown:
        raise TypeError(f"outbox.enqueue() got unknown options {unknown}; a job takes "
                        f"{', '.join(JOB_OPTION_NAMES)}.")
    idempotency_key = options.get("idempotency_key")
    stored, payload_type = _encode(payload, text_type=1)
    _run(conn, _ENQUEUE, (queue, stored, payload_type, options.get("priority", 0),
                          options.get("delay_ms", 0), options.get("ttl_ms"), idempotency_key,
                          options.get("max_attempts")))
    _leave_checkpoints(conn)  # after the write, as in publish()
    if idempotency_key is not None:
        return int(_one(conn, _JOB_BY_KEY, (queue, idempotency_key)))
    return int(_one(conn, _LAST_JOB, ()))


def commit_offsets(
    conn: Any, consumer: str, offsets: Mapping[str, int]
) -> dict[str, int | None]:
    """Save ``consumer``'s next offsets in ``conn``'s transaction through the store's one
    rule (the ``sq_save_offset`` view: never back; never past a topic's readable end, which
    on a replicated store is what the replica holds, as ``Store.commit_offsets``); the saved
    values. A refusal (an unknown topic, an offset past the readable end, a bad name) raises
    your library's error with a message starting ``sq_save_offset:``; nothing of the call
    is written."""
    saved: dict[str, int | None] = {}
    for topic, offset in offsets.items():
        _run(conn, _SAVE_OFFSET, (consumer, topic, offset))
        saved[topic] = _one(conn, _SAVED, (consumer, topic))
    return saved


def _encode(value: Any, *, text_type: int) -> tuple[Any, int]:
    if isinstance(value, str):
        return value, text_type
    if value is None:
        return None, 0
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value), 0
    return _dumps(value), 2


def _run(conn: Any, sql: str, params: tuple[object, ...]) -> Any:
    """``sql`` on a sqlite3 connection or cursor, a SQLAlchemy Connection, or a Session."""
    if hasattr(conn, "exec_driver_sql"):  # SQLAlchemy Connection: the DB-API's ? style
        return conn.exec_driver_sql(sql, params)
    if hasattr(conn, "get_bind") and hasattr(conn, "connection"):  # SQLAlchemy Session
        return conn.connection().exec_driver_sql(sql, params)
    return conn.execute(sql, params)  # sqlite3 (and any DB-API 2 connection with ? style)


def _one(conn: Any, sql: str, params: tuple[object, ...]) -> Any:
    row = _run(conn, sql, params).fetchone()
    return None if row is None else row[0]
