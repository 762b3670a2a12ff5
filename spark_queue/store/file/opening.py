"""The one way the package opens a store file for its work: :func:`open_store_file`.

Opening is three steps that must not drift apart between the Store, the housekeeper,
the replicator's cycles and the background threads: the connection with the store's
pragmas (:func:`~spark_queue.store.file.connection.open_connection`), the schema check
(a file that is no store, or a newer one, is refused; an older one migrates), and the
connection's durability beyond SQLite's ``synchronous``: ``durability="replicated"``
waits at every commit, at the one door (:func:`~spark_queue.store.file.connection.
commit_write`), until the replica holds it. ``tests/store/file/test_commit_door.py``
fails on a site of the package that opens a store file another way.
"""

from __future__ import annotations

import os

from spark_queue import defaults
from spark_queue.store.file import replica_mark
from spark_queue.store.file.connection import StoreConnection, open_connection
from spark_queue.store.file.schema import ensure_schema


def open_store_file(
    path: str | os.PathLike[str],
    *,
    create: bool = True,
    readonly: bool = False,
    durability: str = defaults.DURABILITY,
    busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS,
    replica_wait_ms: int | None = None,
) -> StoreConnection:
    """Open ``path`` as a store (created if missing and ``create``), its schema checked and
    migrated, its commits with ``durability`` (``replica_wait_ms``: how long a replicated
    commit waits for the replica, default ``defaults.REPLICATED_WAIT_MS``); the caller
    closes it. On any failure nothing stays open."""
    path = os.fspath(path)
    conn = open_connection(
        path, create=create, readonly=readonly, durability=durability,
        busy_timeout_ms=busy_timeout_ms,
    )
    try:
        ensure_schema(conn, path, readonly=readonly, busy_timeout_ms=busy_timeout_ms)
    except BaseException:
        conn.close()
        raise
    file = StoreConnection(path, conn)
    if durability == "replicated":
        # Every commit of this connection returns once the replica holds it.
        file.after_commit = replica_mark.ReplicaWait(file, timeout_ms=replica_wait_ms)
    return file
