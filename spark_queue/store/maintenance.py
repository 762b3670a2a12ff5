"""Backups and integrity checks of a store file."""

from __future__ import annotations

import os
from typing import NamedTuple

import apsw

from spark_queue.errors import StoreError, StoreNotFoundError
from spark_queue.store.connection import open_connection, read_transaction

_BACKUP_PAGES_PER_STEP = 1024


class CheckReport(NamedTuple):
    ok: bool
    problems: list[str]


def backup(conn: apsw.Connection, dest_path: str | os.PathLike[str]) -> int:
    """Copy the store to ``dest_path`` (a consistent snapshot, made online); returns pages copied.

    Uses SQLite's backup API, which copies a transactionally consistent image
    while writers keep working; the copy is a complete store on its own.
    """
    if os.path.exists(dest_path):
        raise StoreError(
            f"backup destination {os.fspath(dest_path)!r} already exists; "
            "choose a new path (a backup never overwrites a file)."
        )
    dest = open_connection(dest_path, create=True)
    try:
        with dest.backup("main", conn, "main") as step:
            while not step.done:
                step.step(_BACKUP_PAGES_PER_STEP)
            pages = step.page_count
    finally:
        dest.close()
    return pages


def check_file(path: str | os.PathLike[str]) -> CheckReport:
    """Check a store file that may be too damaged to open as a :class:`Store`.

    Opens it read-only with no schema checks, so a damaged file still gets a
    report of what SQLite finds instead of an error at open.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise StoreNotFoundError(f"store file {path!r} does not exist.")
    try:
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as exc:
        return CheckReport(False, [f"cannot open {path!r}: {exc}"])
    try:
        return check(conn)
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        return CheckReport(False, [f"{path!r}: {exc}"])
    finally:
        conn.close()


def check(conn: apsw.Connection) -> CheckReport:
    """SQLite's integrity check plus the store's own invariants (dense offsets)."""
    problems = [
        row[0] for row in conn.execute("PRAGMA integrity_check") if row[0] != "ok"
    ]
    if problems:
        return CheckReport(False, problems)
    with read_transaction(conn):
        problems.extend(
            f"table {table} row {rowid}: no parent row in {parent}"
            for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check")
        )
        for name, count, low, high, nxt in conn.execute(
            "SELECT t.name, count(e.offset), min(e.offset), max(e.offset), t.next_offset "
            "FROM sq_topics t LEFT JOIN sq_events e ON e.topic_id = t.id GROUP BY t.id"
        ):
            if count and (high - low + 1 != count or high >= nxt):
                problems.append(
                    f"topic {name!r}: offsets {low}..{high} hold {count} events "
                    f"(next offset {nxt}); offsets are no longer dense."
                )
    return CheckReport(not problems, problems)
