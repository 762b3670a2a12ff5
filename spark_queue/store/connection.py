"""Connection policy: how a store file is opened, and how transactions run.

Small named functions in the spirit of apsw's best practice: WAL so readers
never block the writer, a busy timeout so writers queue instead of failing,
foreign keys on, and ``synchronous`` from the caller's durability choice.
A connection belongs to one process: never use one across a fork.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import apsw

from spark_queue.errors import (
    CorruptStoreError,
    NotAStoreError,
    StoreBusyError,
    StoreError,
    StoreFullError,
    StoreNotFoundError,
)

DURABILITY_LEVELS = ("full", "normal", "off")
DEFAULT_BUSY_TIMEOUT_MS = 5000


def open_connection(
    path: str | os.PathLike[str],
    *,
    create: bool = True,
    readonly: bool = False,
    durability: str = "normal",
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
) -> apsw.Connection:
    """Open ``path`` with the store's pragmas; create it (mode 0600) if allowed."""
    if durability not in DURABILITY_LEVELS:
        raise StoreError(
            f"durability must be one of {', '.join(DURABILITY_LEVELS)}; got {durability!r}."
        )
    if not isinstance(busy_timeout_ms, int) or busy_timeout_ms < 0:
        raise StoreError(f"busy_timeout_ms must be an integer >= 0; got {busy_timeout_ms!r}.")
    path = os.fspath(path)
    if not os.path.exists(path):
        if not create or readonly:
            raise StoreNotFoundError(
                f"store file {path!r} does not exist; create it with `sqliteq init {path}` "
                "or open it with create=True."
            )
        _create_private_file(path)
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
    try:
        conn = apsw.Connection(path, flags=flags)
    except apsw.CantOpenError as exc:
        raise StoreError(f"cannot open store file {path!r}: {exc}") from exc
    try:
        conn.set_busy_timeout(busy_timeout_ms)
        _apply_pragmas(conn, durability, readonly)
    except apsw.NotADBError as exc:
        conn.close()
        raise NotAStoreError(
            f"{path!r} is not a SQLite database (or it is encrypted or damaged); "
            "if it was a store, run `sqliteq check` on it or restore it from a backup."
        ) from exc
    except apsw.CorruptError as exc:
        conn.close()
        raise CorruptStoreError(damaged_message(path, exc)) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _create_private_file(path: str) -> None:
    # SQLite gives the -wal and -shm files the main file's mode, so creating
    # the main file 0600 keeps the whole store private to its owner.
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def _apply_pragmas(conn: apsw.Connection, durability: str, readonly: bool) -> None:
    # Reading the schema first turns "not a database" into an error here,
    # before any pragma would try to write to the file.
    conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()
    if not readonly:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchall()[0][0]
        if mode.lower() != "wal":
            raise StoreError(f"could not switch the store to WAL mode (got {mode!r}).")
    conn.execute(f"PRAGMA synchronous={_SYNCHRONOUS[durability]}")
    conn.execute("PRAGMA foreign_keys=ON")


_SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL", "off": "OFF"}


@contextlib.contextmanager
def write_transaction(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """Run the block in one ``BEGIN IMMEDIATE`` transaction: all of it or none.

    IMMEDIATE takes the write lock up front. A deferred transaction that
    reads first and writes later cannot wait for the lock in WAL mode (SQLite
    returns BUSY at once to avoid a deadlock), so every writer starts here.
    """
    with translate_errors():
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if not conn.getautocommit():
                conn.execute("ROLLBACK")
            raise


@contextlib.contextmanager
def read_transaction(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """Run the block against one snapshot of the file (a deferred read transaction)."""
    nested = not conn.getautocommit()
    if not nested:
        conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if not nested and not conn.getautocommit():
            conn.execute("COMMIT")


def damaged_message(path: str | None, exc: BaseException) -> str:
    where = f"store file {path!r}" if path else "the store file"
    target = path or "PATH"
    return (
        f"{where} is damaged ({exc}); run `sqliteq check {target}` to see what is wrong, "
        "and restore the last copy made with `sqliteq backup`."
    )


@contextlib.contextmanager
def translate_errors(path: str | None = None) -> Iterator[None]:
    """Turn SQLite's lock, disk-full and corruption errors into the project's named errors."""
    try:
        yield
    except (apsw.BusyError, apsw.LockedError) as exc:
        raise StoreBusyError(
            "the store is locked by another writer and the busy timeout ran out; "
            "retry, or raise busy_timeout_ms."
        ) from exc
    except apsw.CorruptError as exc:
        raise CorruptStoreError(damaged_message(path, exc)) from exc
    except apsw.FullError as exc:
        raise StoreFullError(
            "the disk holding the store is full (or the file hit its page limit); "
            "nothing of this transaction was written. Free space and retry."
        ) from exc
