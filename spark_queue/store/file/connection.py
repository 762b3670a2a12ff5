"""Connection policy: how a store file is opened, and how transactions run.

Small named functions in the spirit of apsw's best practice: WAL so readers
never block the writer, a busy timeout so writers queue instead of failing,
foreign keys on, and ``synchronous`` from the caller's durability choice.
A connection belongs to one process: never use one across a fork.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

import apsw

from spark_queue import defaults
from spark_queue.defaults import DURABILITY_LEVELS
from spark_queue.errors import (
    StoreBusyError,
    StoreError,
    StoreNotFoundError,
)
from spark_queue.store.file import filesystem, meta
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.sqlite_errors import open_errors, translate_errors

# SQLite's busy timeout is a C int of milliseconds.
MAX_BUSY_TIMEOUT_MS = 2**31 - 1

# A row the store reads from its own tables. Its columns hold the types the schema gives
# them (checked on the way in; `check` finds what a foreign writer broke), which apsw's
# stubs cannot know: they say "any SQLite value" for every column.
Row = tuple[Any, ...]

_Result = TypeVar("_Result")  # what a transaction's work returns

# wait_for_commit looks at data_version after 1 ms, then twice as long each time, at
# most every 50 ms: a commit soon after the wait starts is seen at once, and a long
# idle wait costs about 20 cheap reads a second.
_WAIT_STEP_MIN_S = 0.001
_WAIT_STEP_MAX_S = 0.05


def one_row(cursor: apsw.Cursor) -> Row:
    """The row of a query that always returns one: an aggregate, a PRAGMA, the row of a
    key the same transaction holds."""
    return cursor.fetchall()[0]


def first_value(cursor: apsw.Cursor) -> Any:
    """The first column of :func:`one_row`."""
    return one_row(cursor)[0]


def open_connection(
    path: str | os.PathLike[str],
    *,
    create: bool = True,
    readonly: bool = False,
    durability: str = defaults.DURABILITY,
    busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS,
) -> apsw.Connection:
    """Open ``path`` with the store's per-connection pragmas; create it (mode 0600) if allowed.

    Nothing here writes to the file: the busy timeout, ``synchronous`` and
    ``foreign_keys`` belong to the connection. WAL, which rewrites the file
    header, is switched on by :func:`enable_wal` once the schema check has
    shown the file is a store or new and empty (a foreign SQLite file stays
    byte-identical; ``tests/store/file/test_open.py`` guards it).
    """
    if durability not in DURABILITY_LEVELS:
        raise StoreError(
            f"durability must be one of {', '.join(DURABILITY_LEVELS)}; got {durability!r}."
        )
    check_int(busy_timeout_ms, "busy_timeout_ms", high=MAX_BUSY_TIMEOUT_MS, error=StoreError)
    path = os.fspath(path)
    filesystem.check_directory(path)
    if not os.path.exists(path):
        if not create or readonly:
            raise StoreNotFoundError(
                f"store file {path!r} does not exist; create it with `sqliteq init {path}` "
                "or open it with create=True."
            )
        _create_private_file(path)
    if os.path.isdir(path):
        raise StoreError(f"{path!r} is a directory, not a store file; give the file's path.")
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
    with open_errors(path):
        conn = apsw.Connection(path, flags=flags)
    try:
        with open_errors(path):
            conn.set_busy_timeout(busy_timeout_ms)
            conn.execute(f"PRAGMA synchronous={_SYNCHRONOUS[durability]}")
            conn.execute("PRAGMA foreign_keys=ON")
            # Per connection, writes nothing: a WAL checkpointed to its end is cut back to
            # this size by this connection's next write (spark_queue/store/floor/housekeeping.py).
            conn.execute(f"PRAGMA journal_size_limit={defaults.WAL_LIMIT_BYTES:d}").fetchall()
            # In place of SQLite's autocheckpoint: it asks the file first, at every checkpoint
            # it would make, so no connection checkpoints a replicated store (Litestream's to
            # checkpoint), not even one opened before the store was marked.
            conn.set_wal_hook(_checkpoint_unless_replicated)
    except BaseException:
        conn.close()
        raise
    return conn


# SQLite's own autocheckpoint threshold (pages in the WAL), which the hook below keeps.
_AUTOCHECKPOINT_PAGES = 1000


def _checkpoint_unless_replicated(conn: apsw.Connection, name: str, pages: int) -> int:
    """SQLite's autocheckpoint (a PASSIVE checkpoint once the WAL holds 1,000 pages), but
    never on a replicated store: an application's checkpoint racing Litestream's sync ships
    a replica whose restore fails ``check`` (replica_mark.owns_wal). SQLite calls this after
    each commit, the write lock released; a checkpoint that fails is tried at the next,
    as SQLite's own is (``tests/store/file/test_open.py``)."""
    if pages >= _AUTOCHECKPOINT_PAGES:
        try:
            if not _replicated(conn):
                conn.wal_checkpoint(name)
        except apsw.Error:
            pass
    return apsw.SQLITE_OK


def _replicated(conn: apsw.Connection) -> bool:
    # Here, not in replica_mark (which imports this module); a file that is no store yet
    # has no replica.
    return meta.has(conn, meta.REPLICA_URL)


def _create_private_file(path: str) -> None:
    # SQLite gives the -wal and -shm files the main file's mode, so creating
    # the main file 0600 keeps the whole store private to its owner.
    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError as exc:
        raise StoreError(
            f"store file {path!r} cannot be created ({exc.strerror or exc}: "
            f"{exc.filename or parent!r}); give a path in a directory you can write."
        ) from exc


def enable_wal(conn: apsw.Connection, path: str, busy_timeout_ms: int) -> None:
    """Switch the file to WAL (a no-op when it already is), waiting out other openers.

    Changing the journal mode needs the file to itself, and SQLite answers
    BUSY at once, without the busy handler, when another process is opening
    or migrating the same new file; so this retries until the connection's
    busy timeout runs out (``tests/store/file/test_open.py`` opens one new path
    from 10 processes at once).
    """
    deadline = time.monotonic() + busy_timeout_ms / 1000
    pause_s = 0.001
    while True:
        try:
            with open_errors(path, busy=False):
                mode = first_value(conn.execute("PRAGMA journal_mode=WAL"))
            break
        except (apsw.BusyError, apsw.LockedError) as exc:
            if time.monotonic() >= deadline:
                raise StoreBusyError(
                    f"store file {path!r} stayed locked by another process while switching it "
                    f"to WAL for {busy_timeout_ms} ms; retry, or raise busy_timeout_ms."
                ) from exc
            time.sleep(pause_s)
            pause_s = min(pause_s * 2, 0.05)
    if mode.lower() != "wal":
        raise StoreError(
            f"could not switch store file {path!r} to WAL mode (SQLite kept {mode!r}); "
            "the file system may not support the shared memory WAL needs (use a local disk)."
        )


# "replicated" is NORMAL on the local disk: the copy that makes it durable is the replica's.
_SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL", "off": "OFF", "replicated": "NORMAL"}
# PRAGMA synchronous as it reads back (0-3), whole statements: put a level back as it was.
_SYNCHRONOUS_READ_BACK = tuple("PRAGMA synchronous=" + name
                               for name in ("OFF", "NORMAL", "FULL", "EXTRA"))


@contextlib.contextmanager
def write_transaction(
    conn: apsw.Connection, after_commit: Callable[[], None] | None = None
) -> Iterator[apsw.Connection]:
    """Run the block in one ``BEGIN IMMEDIATE`` transaction: all of it or none; it commits
    through :func:`commit_write`.

    IMMEDIATE takes the write lock up front. A deferred transaction that
    reads first and writes later cannot wait for the lock in WAL mode (SQLite
    returns BUSY at once to avoid a deadlock), so every writer starts here.
    """
    with translate_errors():
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            rollback_write(conn)
            raise
        commit_write(conn, after_commit)


def commit_write(conn: apsw.Connection, after_commit: Callable[[], None] | None) -> None:
    """THE door: every write transaction of the package commits here, and nowhere else.

    ``after_commit`` is the durability a connection was opened with beyond SQLite's
    ``synchronous``: for ``durability="replicated"`` it returns once the replica holds the
    commit (spark_queue/store/file/replica_mark.py, ReplicaWait), else it is None. A COMMIT
    that fails rolls back; an ``after_commit`` that raises leaves the commit standing (it
    is local) and the caller unanswered. ``tests/store/file/test_commit_door.py`` fails on
    any BEGIN, COMMIT or ROLLBACK of the package outside this module's doors.
    """
    try:
        conn.execute("COMMIT")
    except BaseException:
        rollback_write(conn)
        raise
    if after_commit is not None:
        after_commit()


def rollback_write(conn: apsw.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already (a failed COMMIT may)."""
    if not conn.getautocommit():
        conn.execute("ROLLBACK")


@contextlib.contextmanager
def savepoint(
    conn: apsw.Connection, undo: tuple[type[BaseException], ...] = (BaseException,)
) -> Iterator[apsw.Connection]:
    """The block under a savepoint inside the caller's transaction: if it raises one of
    ``undo``, what it wrote is undone and the transaction goes on as before the block (a
    call of ``store.transaction()`` that refuses; one refused group of a producer's batch).
    Any other error, or one after which SQLite ended the transaction itself (a full disk),
    is left to the transaction's own rollback."""
    conn.execute("SAVEPOINT sq_call")
    try:
        yield conn
    except undo:
        if not conn.getautocommit():
            conn.execute("ROLLBACK TO sq_call")
            conn.execute("RELEASE sq_call")
        raise
    conn.execute("RELEASE sq_call")


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


def now_ms() -> int:
    """The store's clock: milliseconds since the epoch (event times, leases, retention)."""
    return time.time_ns() // 1_000_000


def now_or(given_ms: int | None) -> int:
    """``given_ms`` when a caller fixes the time (a test, a replayed run), else :func:`now_ms`."""
    return now_ms() if given_ms is None else given_ms


class StoreConnection:
    """The one owner of a store file's apsw connection: its transactions, their error
    translation and the clock. :class:`~spark_queue.store.Store` and
    :class:`~spark_queue.store.Queue` both reach the file through one of these, so a read
    path cannot forget to translate an SQLite error into a named one."""

    now_ms = staticmethod(now_ms)

    def __init__(self, path: str, conn: apsw.Connection) -> None:
        self.path = path
        self.conn = conn
        # Called after every commit of this connection (commit_write, the door):
        # durability="replicated" waits there until the replica holds the commit
        # (spark_queue/store/file/replica_mark.py); set by the one open (opening.py).
        self.after_commit: Callable[[], None] | None = None

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: all of the block commits or none; errors named;
        it commits through the door (:func:`commit_write`) with this connection's durability."""
        with write_transaction(self.conn, self.after_commit) as conn:
            yield conn

    def begin(self) -> None:
        """Open a write transaction the caller ends with :meth:`commit` or :meth:`rollback`
        (``store.transaction()``, whose block spans the caller's code)."""
        self.conn.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        """Commit :meth:`begin`'s transaction through the door, with this connection's
        durability."""
        commit_write(self.conn, self.after_commit)

    def rollback(self) -> None:
        """Roll back :meth:`begin`'s transaction (if SQLite has not already)."""
        rollback_write(self.conn)

    @contextlib.contextmanager
    def synced_write(self) -> Iterator[apsw.Connection]:
        """As :meth:`write`, with its commit fsynced whatever this connection's durability:
        ``synchronous=FULL`` for this one transaction, the connection's own level put back
        (call it outside any transaction: SQLite ignores the pragma inside one)."""
        level = int(first_value(self.conn.execute("PRAGMA synchronous")))
        self.conn.execute("PRAGMA synchronous=FULL")
        try:
            with self.write() as conn:
                yield conn
        finally:
            self.conn.execute(_SYNCHRONOUS_READ_BACK[level])

    def transact(self, work: Callable[..., _Result], *args: Any) -> _Result:
        """``work(conn, *args)`` in one ``BEGIN IMMEDIATE`` transaction, as :meth:`write`
        runs a block, with no generator around it: entering and leaving the context
        managers costs a one-event transaction a tenth of its time (``Store.publish``;
        ``python -m benchmarks store --section single``)."""
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(conn, *args)
            except BaseException:
                rollback_write(conn)
                raise
            commit_write(conn, self.after_commit)
        except (apsw.Error, OverflowError, UnicodeEncodeError):
            with translate_errors(self.path):
                raise
        return result

    @contextlib.contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        """The block's reads against one snapshot (nested blocks share it); errors named."""
        with translate_errors(), read_transaction(self.conn) as conn:
            yield conn

    def data_version(self) -> int:
        """SQLite's ``PRAGMA data_version``: changes whenever another connection commits."""
        with translate_errors():
            return first_value(self.conn.execute("PRAGMA data_version"))

    def wait_for_commit(self, timeout_ms: float, stop: threading.Event | None = None) -> bool:
        """Sleep until another connection commits, ``timeout_ms`` passes or ``stop`` is set
        (whichever comes first); True if a commit came. The one polling wait of the store
        and the worker: a full queue's enqueue, an idle or held worker slot."""
        version = self.data_version()
        step = _WAIT_STEP_MIN_S
        end = time.monotonic() + timeout_ms / 1000
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return False
            if stop is None:
                time.sleep(min(step, left))
            elif stop.wait(min(step, left)):
                return False
            if self.data_version() != version:
                return True
            step = min(step * 2, _WAIT_STEP_MAX_S)


_Class = TypeVar("_Class", bound=type)


def translated(cls: _Class) -> _Class:
    """Run every public method of ``cls`` (which holds a ``file``: a StoreConnection) inside
    :func:`translate_errors`: the one translation point of the Store's and Queue's public
    methods, so a closed store, an integer SQLite cannot hold or an I/O error reaches the
    caller named, whichever path a method takes (``tests/store/test_argument_errors.py``)."""
    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(member):
            setattr(cls, name, _translating(member))
    return cls


def _translating(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        # try/except, not a with-block: free when nothing is raised (the hot paths).
        try:
            return method(self, *args, **kwargs)
        except (apsw.Error, OverflowError, UnicodeEncodeError):
            with translate_errors(self.file.path):
                raise

    return call


class HasStoreConnection(Protocol):
    """What a :class:`~spark_queue.store.Queue` is opened on: a Store (or anything holding one)."""

    file: StoreConnection
