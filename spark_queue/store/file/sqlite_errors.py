"""SQLite's errors, named: the one place that turns apsw's exceptions into the store's.

:func:`translate_errors` names what any statement can meet (a lock past the busy timeout,
damage, a full disk, a read-only file, I/O, a closed connection, an integer SQLite cannot
hold, a nested transaction); :func:`open_errors` adds what only opening a file meets.
:class:`~spark_queue.store.file.connection.StoreConnection` runs every transaction inside
them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import apsw

from spark_queue.errors import (
    ArgumentError,
    CorruptStoreError,
    NotAStoreError,
    PayloadError,
    ReadOnlyStoreError,
    StoreBusyError,
    StoreClosedError,
    StoreError,
    StoreFullError,
    TransactionOpenError,
)


@contextlib.contextmanager
def open_errors(path: str, *, busy: bool = True) -> Iterator[None]:
    """Name every SQLite error that opening or checking a file can raise.

    :func:`translate_errors` names what any statement can meet (damage, a full
    disk, a read-only file, I/O); this adds what only opening meets: a lock
    held while the file is being set up, a file that is not SQLite at all, and
    anything else SQLite says about the path. With ``busy=False`` lock errors
    pass through unchanged for a caller that retries.
    """
    try:
        with translate_errors(path, busy=False):
            yield
    except (apsw.BusyError, apsw.LockedError) as exc:
        if not busy:
            raise
        raise StoreBusyError(
            f"store file {path!r} is locked by another process and the busy timeout ran out; "
            "retry, or raise busy_timeout_ms."
        ) from exc
    except apsw.NotADBError as exc:
        raise NotAStoreError(
            f"{path!r} is not a SQLite database (or it is encrypted or damaged); "
            "if it was a store, run `sqliteq check` on it or restore it from a backup."
        ) from exc
    except apsw.Error as exc:
        raise StoreError(
            f"cannot open store file {path!r} ({type(exc).__name__}: {exc}); check that the "
            "path is a readable file on a local disk and that its directory is writable."
        ) from exc


def damaged_message(path: str | None, exc: BaseException) -> str:
    where = f"store file {path!r}" if path else "the store file"
    target = path or "PATH"
    return (
        f"{where} is damaged ({exc}); run `sqliteq check {target}` to see what is wrong, "
        "and restore the last copy made with `sqliteq backup`."
    )


@contextlib.contextmanager
def translate_errors(path: str | None = None, *, busy: bool = True) -> Iterator[None]:
    """Turn SQLite's lock, disk-full, read-only, corruption and I/O errors into named errors.

    The one place that names them (:func:`open_errors` builds on it); with
    ``busy=False`` lock errors pass through for a caller that names or retries them.
    """
    try:
        yield
    except apsw.ConnectionClosedError as exc:
        raise StoreClosedError(
            f"store{'' if path is None else f' {path!r}'} was closed; open a new Store "
            "(a Queue lives as long as the Store it came from)."
        ) from exc
    except OverflowError as exc:
        # The net under spark_queue.store.file.arguments.check_int: an integer it was not
        # asked to check reached SQLite, which holds 64-bit integers only.
        raise ArgumentError(
            f"an integer given to the store is outside what SQLite holds (an integer from "
            f"-2**63 to 2**63 - 1): {exc}. Nothing was written."
        ) from exc
    except apsw.ReadOnlyError as exc:
        raise ReadOnlyStoreError(
            f"store{'' if path is None else f' {path!r}'} cannot be written: it was opened "
            "read-only (readonly=True), or its file or directory is read-only. Nothing was "
            "written; open it read-write, or fix the permissions."
        ) from exc
    except (apsw.BusyError, apsw.LockedError) as exc:
        if not busy:
            raise
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
    except (apsw.IOError, apsw.CantOpenError) as exc:
        raise StoreError(
            f"store{'' if path is None else f' {path!r}'} could not be read or written "
            f"({type(exc).__name__}: {exc}): the file may have been removed, moved or its disk "
            "failed. Nothing of this transaction was written; check the file and reopen it."
        ) from exc
    except apsw.SQLError as exc:
        if _NESTED not in str(exc):
            raise
        raise TransactionOpenError(
            f"store{'' if path is None else f' {path!r}'} has a transaction open on this "
            "connection (store.transaction(), store.write() or a worker handler's "
            "job.transaction), and this call starts one of its own. Inside the block, write "
            "through the transaction: tx.execute, tx.publish, tx.publish_many, tx.enqueue, "
            "tx.commit_offsets (docs/transactions.md); or make the call after the block."
        ) from exc
    except UnicodeEncodeError as exc:
        # A str the codec did not see (an idempotency key, a name in a read) with a lone
        # surrogate: apsw binds text as UTF-8. Payloads are checked earlier, by name.
        raise PayloadError(
            f"a string given to the store holds {exc.object[exc.start:exc.end]!r} at position "
            f"{exc.start} ({exc.reason}): SQLite keeps text as UTF-8, which cannot hold it. "
            "Nothing of this transaction was written; fix the string."
        ) from exc


# What SQLite says when BEGIN meets an open transaction (a Store call inside one).
_NESTED = "cannot start a transaction within a transaction"
