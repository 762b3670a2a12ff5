"""The replicator's side of the replicated high-water mark, on a connection of its own.

:class:`ReplicaCycles` is what ``sqliteq replicate`` (:mod:`spark_queue.replication`)
runs against the store: mark it replicated, begin a cycle, finish it once Litestream
has confirmed the replica holds the cycle's commit. The mark, the cap and the
writers' wait are :mod:`spark_queue.store.file.replica_mark`.
"""

from __future__ import annotations

import os

from spark_queue import defaults
from spark_queue.store.file import meta, replica_mark, replicator_lease
from spark_queue.store.file.connection import StoreConnection, open_connection
from spark_queue.store.file.opening import open_store_file
from spark_queue.store.file.replica_mark import ReplicaStatus
from spark_queue.store.file.replicator_lease import ReplicatorLease, ReplicatorRecord


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
        self._lease = ReplicatorLease(self.file)

    def close(self) -> None:
        """Close the connection and drop the lease (after Litestream has stopped)."""
        self._lease.release()
        self.file.close()

    def take_lease(self) -> ReplicatorRecord:
        """Become the store's one replicator (:mod:`spark_queue.store.file.replicator_lease`);
        ReplicatorRunningError naming the one that runs."""
        return self._lease.take()

    @property
    def lease_fd(self) -> int | None:
        """The lease's lock file, open: Litestream inherits it, so the lease lasts until
        the replicator and its Litestream have both ended."""
        return self._lease.fd

    def gave_up(self, reason: str) -> None:
        """Record in the store that this replicator stops on ``reason``: readers, ``check``
        and replicated writers say so until a replicator starts again."""
        self._lease.gave_up(reason)

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

    def mark_restored(self) -> bool:
        """A store just restored: everything in it came from the replica, so the mark
        covers all of it (a cycle with no sync: the replica holds what the file holds).
        False, nothing written, when the store is not marked replicated."""
        if self.status() is None:
            return False
        cycle, ends = self.begin()
        self.finish(cycle, ends)
        return True

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


def replication_warnings(path: str | os.PathLike[str]) -> list[str]:
    """What ``topics``, ``tail`` and the writing commands say of a replicated store whose
    replicator is not running (:func:`replicator_lease.warnings_of`); [] otherwise."""
    path = os.fspath(path)
    if replicator_lease.replicator_running(path):
        return []
    file = open_store_file(path, create=False, readonly=True)
    try:
        with file.read() as conn:
            return replicator_lease.warnings_of(conn, path)
    finally:
        file.close()
