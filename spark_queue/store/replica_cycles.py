"""The replicator's side of the replicated high-water mark, on a connection of its own.

:class:`ReplicaCycles` is what ``sqliteq replicate`` (:mod:`spark_queue.replication`)
runs against the store: mark it replicated, begin a cycle, finish it once Litestream
has confirmed the replica holds the cycle's commit. The mark, the cap and the
writers' wait are :mod:`spark_queue.store.file.replica_mark`.
"""

from __future__ import annotations

import os

from spark_queue import defaults
from spark_queue.store.file import meta, replica_mark
from spark_queue.store.file.connection import StoreConnection, open_connection
from spark_queue.store.file.opening import open_store_file
from spark_queue.store.file.replica_mark import ReplicaStatus


class ReplicaCycles:
    """One store's replicated high-water mark, kept by its replicator (one process).

    Each method is one transaction. ``begin()`` then ``finish()`` make a cycle; between
    them the caller makes sure the replica holds ``begin()``'s commit.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS
    ) -> None:
        self.path = os.fspath(path)
        self.file = open_store_file(self.path, create=True, busy_timeout_ms=busy_timeout_ms)
        self.wake_path = replica_mark.wake_path(self.path)
        self._topics: replica_mark.CycleTopics | None = None

    def close(self) -> None:
        self.file.close()

    def mark(self, url: str) -> None:
        """Mark the store replicated to ``url``: readers are capped at the mark from now on."""
        with self.file.write() as conn:
            replica_mark.mark_replicated(conn, url)
        # From now on Litestream checkpoints the WAL (replica_mark.owns_wal).
        self.file.conn.execute("PRAGMA wal_autocheckpoint=0").fetchall()

    def unmark(self) -> bool:
        """Forget the replica: readers see every event; True if the store was marked."""
        with self.file.write() as conn:
            return replica_mark.unmark(conn)

    def begin(self) -> tuple[int, dict[int, int]]:
        """Start a cycle: its number and every topic's end at its commit."""
        with self.file.write() as conn:
            begun = replica_mark.begin_cycle(conn)
            # Who those topics were, so finish() gives no end to a topic created anew
            # under a reused id in between (replica_mark's module docstring).
            self._topics = replica_mark.cycle_topics(conn)
            return begun

    def finish(self, cycle: int, ends: dict[int, int]) -> None:
        """The replica holds ``begin()``'s commit: ``ends`` become the readable mark."""
        with self.file.write() as conn:
            replica_mark.finish_cycle(conn, cycle, ends, self._topics)

    def changed(self) -> int:
        """``PRAGMA data_version``: changes when another connection commits."""
        return self.file.data_version()

    def status(self) -> ReplicaStatus | None:
        """The replica's status as recorded in the store, or None when not replicated."""
        with self.file.read() as conn:
            return replica_mark.read_replica_status(conn)


def replica_status(path: str | os.PathLike[str]) -> ReplicaStatus | None:
    """The recorded replica status of the store at ``path`` (read-only; None: not replicated)."""
    conn = open_connection(os.fspath(path), create=False, readonly=True)
    try:
        file = StoreConnection(os.fspath(path), conn)
        with file.read() as c:
            if not meta.exists(c):
                return None  # a file being created: no store yet, so not replicated
            return replica_mark.read_replica_status(c)
    finally:
        conn.close()
