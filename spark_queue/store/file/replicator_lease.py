"""One replicator per store, and what the last one left behind (``sqliteq replicate``).

Two Litestreams on one store share its local LTX directory: one or both die ("rename ltx
file"), or both live and the end readers see moves backwards (issue 58, point 4). So a
replicator holds a lease for as long as it runs, the kernel lock of
:mod:`spark_queue.store.file.lease` (which says why it is no timed lease):

- **the lock**: an exclusive ``flock`` on ``STORE-replicator.lock`` (mode 0600), held on
  an open file the replicator shares with its Litestream only (the one child that must
  not outlive it unnoticed). The kernel drops it when both have ended, however they
  end: a SIGKILLed replicator's Litestream gets SIGTERM (``PR_SET_PDEATHSIG``), ships
  what is left and exits, and the next replicator takes over then. No heartbeat
  writes: an idle store costs no object-store request.
- **the record**: who holds it, in the store's meta table (``replica_replicator``: pid,
  host, since), so a second replicator is refused naming the first.
- **giving up**: a replicator that stops on an error records when and why
  (``replica_gave_up``); readers (``topics``, ``tail``), ``sqliteq check`` and a
  replicated writer's timeout say so, until a replicator starts again.

Whether a replicator runs is asked of the lock (:func:`replicator_running`): a shared
``flock`` taken and dropped at once; a replicator starting while one is held retries its
own for :data:`TAKE_RETRY_S` before it refuses, so a look never refuses a replicator.
A store is local to one machine (SQLite's WAL needs one host), so the lock is too.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from typing import NamedTuple

import apsw

from spark_queue.errors import ReplicatorRunningError, SparkQueueError
from spark_queue.store.file import lease, meta
from spark_queue.store.file.connection import StoreConnection, now_ms
from spark_queue.times import format_time_ms

#: How long a starting replicator retries a lock held for a look (:func:`replicator_running`
#: holds it for microseconds) before it refuses: a replicator that runs holds it for good.
TAKE_RETRY_S = 1.0
#: How long it waits when the recorded holder's process is gone (killed) but the lock is
#: still held: that replicator's Litestream is shipping its last changes on SIGTERM.
STOPPING_WAIT_S = 60.0

_HOLDER_KEY = meta.REPLICA_REPLICATOR
_GAVE_UP_KEY = meta.REPLICA_GAVE_UP


class ReplicatorRecord(NamedTuple):
    """A replicator as the store records it: who, and since when."""

    pid: int
    host: str
    since_ms: int

    def describe(self) -> str:
        return lease.describe_process(self.pid, self.host, self.since_ms)


class GaveUp(NamedTuple):
    """A replicator that stopped on an error: when, who, and the error."""

    at_ms: int
    pid: int
    host: str
    reason: str

    def describe(self) -> str:
        return (f"replicator gave up at {format_time_ms(self.at_ms)} (process {self.pid} on host "
                f"{self.host!r}): {self.reason}")


def lock_path(store_path: str) -> str:
    """The lock file beside the store (as its ``-wal`` and ``-replica-wake``)."""
    return f"{os.path.abspath(store_path)}-replicator.lock"


def replicator_running(store_path: str) -> bool:
    """Whether a replicator holds the store's lock now (no lock file: none ever ran)."""
    return lease.lock_held(lock_path(store_path))


class ReplicatorLease:
    """The lease of the replicator of one store (see the module): :meth:`take` it before
    Litestream starts, :meth:`release` it after Litestream stopped."""

    def __init__(self, file: StoreConnection) -> None:
        self.file = file
        self._fd: int | None = None

    def take(self) -> ReplicatorRecord:
        """Take the lock and record this process as the store's replicator (clearing an
        earlier one's ``gave up``); ReplicatorRunningError naming the holder if one runs."""
        fd = lease.open_lock(lock_path(self.file.path))
        try:
            started = time.monotonic()
            while not lease.try_lock(fd):
                waited = time.monotonic() - started
                if waited >= TAKE_RETRY_S:
                    with self.file.read() as conn:
                        holder = read_replicator(conn)
                    if holder is None or not _gone(holder) or waited >= STOPPING_WAIT_S:
                        raise ReplicatorRunningError(self._refusal(holder))
                time.sleep(0.01)
            record = ReplicatorRecord(os.getpid(), socket.gethostname(), now_ms())
            with self.file.write() as conn:
                meta.put_json(conn, _HOLDER_KEY, record._asdict())
                meta.drop(conn, _GAVE_UP_KEY)
        except BaseException:
            os.close(fd)  # closing the file drops the lock
            raise
        self._fd = fd
        return record

    @property
    def fd(self) -> int | None:
        """The lock's open file, for the one child that holds it too (Litestream)."""
        return self._fd

    def _refusal(self, holder: ReplicatorRecord | None) -> str:
        who = ("a replicator that has not recorded itself yet" if holder is None
               else f"the replicator {holder.describe()}")
        return (f"store {self.file.path!r} is already being replicated, by {who}; two "
                "Litestreams on one store break its replica. Stop that one first (SIGTERM "
                f"or Ctrl-C), or leave it running. The lock is {lock_path(self.file.path)!r}.")

    def gave_up(self, reason: str) -> None:
        """Record that this replicator stops on ``reason`` (best effort: the store may be
        what failed; the lock is dropped all the same by :meth:`release`)."""
        record = GaveUp(now_ms(), os.getpid(), socket.gethostname(), " ".join(reason.split()))
        with contextlib.suppress(apsw.Error, OSError, SparkQueueError), \
                self.file.write() as conn:
            meta.put_json(conn, _GAVE_UP_KEY, record._asdict())

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _gone(holder: ReplicatorRecord) -> bool:
    """Whether the recorded holder's process has ended (on this host; another host's
    cannot be asked, and a store lives on one)."""
    if holder.host != socket.gethostname():
        return False
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def read_replicator(conn: apsw.Connection) -> ReplicatorRecord | None:
    """The last replicator recorded (caller's snapshot), or None."""
    value = meta.get_json(conn, _HOLDER_KEY)
    try:
        return None if value is None else ReplicatorRecord(
            int(value["pid"]), str(value["host"]), int(value["since_ms"]))
    except (KeyError, TypeError, ValueError):
        return None  # another client's value: as if absent


def read_gave_up(conn: apsw.Connection) -> GaveUp | None:
    """The ``gave up`` a replicator left (caller's snapshot), or None."""
    value = meta.get_json(conn, _GAVE_UP_KEY)
    try:
        return None if value is None else GaveUp(
            int(value["at_ms"]), int(value["pid"]), str(value["host"]), str(value["reason"]))
    except (KeyError, TypeError, ValueError):
        return None


def gave_up_note(conn: apsw.Connection) -> str:
    """`` The last replicator gave up ...`` for a replicated writer's timeout, or ""."""
    gave_up = read_gave_up(conn)
    return "" if gave_up is None else f" The last {gave_up.describe()}."


def warnings_of(conn: apsw.Connection, store_path: str) -> list[str]:
    """What a reader or writer of a replicated store should know when no replicator runs
    (caller's snapshot): readers see only what the replica held, and why nobody ships the
    rest ([] when the store is not replicated, or a replicator runs)."""
    url = meta.get(conn, meta.REPLICA_URL) if meta.exists(conn) else None
    if url is None or replicator_running(store_path):
        return []
    gave_up = read_gave_up(conn)
    said = [gave_up.describe()] if gave_up is not None else []
    return said + [
        f"store {store_path!r} is replicated to {url}, but no replicator is running: readers "
        "see each topic only up to the replica's mark, new writes stay unseen and "
        "durability='replicated' writes time out. Run "
        f"`sqliteq replicate {store_path} --to {url}`, or `sqliteq replicate {store_path} "
        "--forget` if the store is no longer replicated."
    ]
