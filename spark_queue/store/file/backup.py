"""Backups of a store file: one consistent copy, made online, never half-written.

:class:`BackupSource` opens a file for a backup that writes nothing to it and migrates
nothing; :func:`backup` copies an open connection's store inside one read transaction,
into a temporary file linked into place only when complete.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable

import apsw

from spark_queue import defaults
from spark_queue.errors import StoreError
from spark_queue.store.file.connection import (
    first_value,
    open_connection,
    read_transaction,
)
from spark_queue.store.file.schema import readable_version
from spark_queue.store.file.sqlite_errors import open_errors, translate_errors

# 4 MiB of 4 KiB pages per step: a progress report every few milliseconds.
_BACKUP_PAGES_PER_STEP = 1024

BackupProgress = Callable[[int, int], None]


class BackupSource:
    """A store file opened for a backup that writes nothing to it and migrates nothing: the copy
    keeps the source's schema version, so the release that wrote the source opens it,
    and the source stays byte-identical (``tests/store/test_backup_old_stores.py``)."""

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS
    ) -> None:
        self.path = os.fspath(path)
        # Read-write but query_only, not SQLITE_OPEN_READONLY: a read-only connection to a
        # WAL file leaves -wal and -shm files behind it, while this one, writing nothing,
        # lets SQLite remove them on close as for any last connection. (On a read-only
        # file SQLite opens it read-only by itself.)
        self.conn = open_connection(self.path, create=False, busy_timeout_ms=busy_timeout_ms)
        try:
            with open_errors(self.path):
                self.conn.execute("PRAGMA query_only=ON")
            self.version = readable_version(self.conn, self.path)
        except BaseException:
            self.conn.close()
            raise

    def page_size(self) -> int:
        with translate_errors(self.path):
            return int(first_value(self.conn.execute("PRAGMA page_size")))

    def backup(self, dest_path: str | os.PathLike[str], progress: BackupProgress | None = None
               ) -> int:
        """As :meth:`Store.backup <spark_queue.store.Store.backup>`: returns the pages copied."""
        with translate_errors(self.path):
            return copy_store(self.conn, dest_path, progress)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> BackupSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def backup_file(
    path: str | os.PathLike[str],
    dest_path: str | os.PathLike[str],
    progress: BackupProgress | None = None,
) -> int:
    """Copy the store file ``path`` to the new file ``dest_path`` without migrating or
    writing the source (see :class:`BackupSource`); returns the pages copied."""
    with BackupSource(path) as source:
        return source.backup(dest_path, progress)


def copy_store(
    conn: apsw.Connection,
    dest_path: str | os.PathLike[str],
    progress: BackupProgress | None = None,
) -> int:
    """Copy the store to ``dest_path`` (one consistent snapshot, made online); returns pages.

    The whole copy runs inside ONE read transaction on the source. SQLite's
    backup API restarts from page 0 whenever another connection writes
    between two steps, so stepping outside a transaction never finishes on a
    store that commits every few milliseconds; inside one, the snapshot
    cannot change, and in WAL mode writers go on meanwhile (the WAL grows
    until the copy ends). We chose this over ``VACUUM INTO``, which gives the
    same consistency but rebuilds every table and index (slower on large
    files) and reports no progress: here ``progress(copied, total)`` is
    called after each step of ``_BACKUP_PAGES_PER_STEP`` pages.

    The copy is written to a temporary file beside ``dest_path`` and linked
    into place only when complete, so ``dest_path`` never holds half a copy
    and an existing file is never overwritten
    (``tests/store/test_backup.py`` guards it under a publishing process).
    """
    dest_path = os.fspath(dest_path)
    if os.path.lexists(dest_path):
        raise StoreError(
            f"backup destination {dest_path!r} already exists; "
            "choose a new path (a backup never overwrites a file)."
        )
    folder = os.path.dirname(os.path.abspath(dest_path))
    try:
        fd, partial = tempfile.mkstemp(prefix=".sqliteq-backup-", suffix=".partial", dir=folder)
    except OSError as exc:
        raise StoreError(
            f"cannot create backup {dest_path!r}: {exc.strerror}; choose a writable directory."
        ) from exc
    os.close(fd)
    try:
        with open_errors(partial):
            pages = _copy(conn, partial, progress)
        _link_new(partial, dest_path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
    return pages


def _copy(conn: apsw.Connection, partial: str, progress: BackupProgress | None) -> int:
    dest = apsw.Connection(partial)
    try:
        with read_transaction(conn):
            # BEGIN is deferred: this read pins the snapshot every step copies from.
            conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()
            with dest.backup("main", conn, "main") as step:
                while not step.done:
                    step.step(_BACKUP_PAGES_PER_STEP)
                    if progress is not None:
                        progress(step.page_count - step.remaining, step.page_count)
                pages = step.page_count
        return pages
    finally:
        dest.close()


def _link_new(partial: str, dest_path: str) -> None:
    # link() fails when dest_path exists: no window in which a file that
    # appeared meanwhile could be overwritten.
    try:
        os.link(partial, dest_path)
    except FileExistsError as exc:
        raise StoreError(
            f"backup destination {dest_path!r} appeared while the backup ran; "
            "choose a new path (a backup never overwrites a file)."
        ) from exc
    except OSError as exc:
        raise StoreError(f"cannot create backup {dest_path!r}: {exc.strerror}.") from exc
