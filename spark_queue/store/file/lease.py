"""Leases: one process at a time does a job of the store, and the others learn who does.

Two kinds, owned here together because they answer different failures:

- **A timed lease** (:class:`LeaseKind`, :class:`Holder`): a JSON row of the store's meta
  table, taken and renewed in the caller's write transaction, given back when the work
  ends. A holder that stops renewing (killed, paused, its store busy too long) loses it
  when it runs out, and the row says who held it. Housekeeping's (``housekeeping_lease``,
  :mod:`spark_queue.store.floor.housekeeping`) and each Kafka copy's (``mirror_lease/<hold>``,
  :mod:`spark_queue.store.streams.mirror_lease`) are timed leases.
- **A kernel lock** (:func:`open_lock`, :func:`try_lock`, :func:`lock_held`): an
  exclusive ``flock`` on a file beside the store, the replicator's
  (:mod:`spark_queue.store.file.replicator_lease`). The kernel drops it when every
  process holding the open file has ended, however it ended. The replicator shares it
  with its Litestream child, which goes on shipping for a while after a SIGKILLed
  replicator: no expiry could say when that child has ended, and a timed lease's
  renewals would cost an idle replicated store an object-store request each. The holder
  description (:func:`describe_process`) is the timed leases'.

**The one staleness rule** (:meth:`Holder.live`). A timed lease holds at ``now`` while:

1. it has not run out: ``now < until_ms``;
2. it was not written by a clock that was ahead and has been set back since: its write
   time (``renewed_ms``; ``until_ms - lease_ms`` for a row without it) lies at most
   :data:`~spark_queue.defaults.CLOCK_SKEW_MS` in the future, so a clock set back delays
   a take-over by that bound at most;
3. its process has not certainly ended, for a row that records the process (its pid
   namespace and start time): a holder of this host and namespace whose pid no longer
   runs, or runs another process, is gone at once, so a rerun right after a kill goes on.

The row's fields: the holder's own name (under ``holder`` or ``token``, the field each
kind's rows had before this module, as processes of earlier releases read them), ``host``,
``pid``, ``since_ms``, ``until_ms``, ``lease_ms``, ``renewed_ms``, ``renewals`` and
``process``. A row another SQLite client made unreadable is no lease: the next take
replaces it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from dataclasses import dataclass
from typing import NamedTuple

import apsw

from spark_queue import defaults
from spark_queue.store.file import meta
from spark_queue.store.file.connection import now_ms
from spark_queue.times import format_time_ms


@dataclass(frozen=True)
class LeaseKind:
    """A timed lease's kind: how long it lasts unless renewed (also the length of a row
    that does not record its own), and the field its rows name the holder by."""

    length_ms: int
    holder_field: str = "holder"


class Holder(NamedTuple):
    """Who holds a timed lease, as its row says (or as a taker will write it)."""

    name: str  # the holder's own: two holders in one process differ
    host: str
    pid: int
    since_ms: int
    until_ms: int
    lease_ms: int
    renewed_ms: int | None = None
    renewals: int = 0
    process: str = ""  # "<pid namespace>/<start time>" ("" where not recorded)

    def describe(self) -> str:
        return (f"{describe_process(self.pid, self.host, self.since_ms)} (its lease runs "
                f"until {format_time_ms(self.until_ms)} unless renewed)")

    def live(self, now: int) -> bool:
        """The one staleness rule (see the module): run out, written ahead, or gone."""
        written = self.until_ms - self.lease_ms if self.renewed_ms is None else self.renewed_ms
        return (now < self.until_ms and written <= now + defaults.CLOCK_SKEW_MS
                and not self.gone())

    def gone(self) -> bool:
        """Whether its process certainly ended: a process of this machine's (same host and
        pid namespace) that no longer runs, or whose id another process took since."""
        if not self.process or self.host != socket.gethostname():
            return False
        if self.process.split("/")[0] != _namespace():
            return False  # another container's process: its ids are not ours to look up
        return process_of(self.pid) != self.process

    def row(self, kind: LeaseKind) -> dict[str, object]:
        record: dict[str, object] = self._asdict()
        record[kind.holder_field] = record.pop("name")
        return record


def describe_process(pid: int, host: str, since_ms: int) -> str:
    """``process 12 on host 'box' since 2024-05-01T12:00:00.000Z``: every holder's words."""
    return f"process {pid} on host {host!r} since {format_time_ms(since_ms)}"


def new_claim(kind: LeaseKind, *, name: str | None = None, lease_ms: int | None = None,
               record_process: bool = True) -> Holder:
    """This process's claim on a lease of ``kind`` (not taken yet): ``name`` random unless
    given; ``record_process`` False leaves rule 3 out, so a killed holder's lease is waited
    out."""
    now = now_ms()
    pid = os.getpid()
    length = kind.length_ms if lease_ms is None else lease_ms
    return Holder(name or os.urandom(8).hex(), socket.gethostname(), pid, now, now + length,
                  length, now, 0, process_of(pid) if record_process else "")


def holder_of(conn: apsw.Connection, kind: LeaseKind, key: str) -> Holder | None:
    """The lease under ``key`` as its row says (caller's snapshot); None if none or unreadable."""
    found = meta.get_json(conn, key)
    if not isinstance(found, dict):
        return None
    try:
        until = int(found["until_ms"])
        renewed = found.get("renewed_ms")
        return Holder(
            str(found[kind.holder_field]), str(found.get("host", "")), int(found.get("pid", 0)),
            int(found.get("since_ms", until)), until, int(found.get("lease_ms", kind.length_ms)),
            None if renewed is None else int(renewed), int(found.get("renewals", 0)),
            str(found.get("process", "")))
    except (TypeError, ValueError, KeyError):
        return None


def live_other(conn: apsw.Connection, kind: LeaseKind, key: str, me: Holder,
               now: int) -> Holder | None:
    """Another holder's live lease under ``key`` (caller's snapshot), or None."""
    found = holder_of(conn, kind, key)
    return found if found is not None and found.name != me.name and found.live(now) else None


def acquire(conn: apsw.Connection, kind: LeaseKind, key: str, me: Holder) -> Holder:
    """Take or renew ``me``'s lease in the caller's write transaction unless another holds
    it live; returns who holds it now (``me`` as written, or the other)."""
    now = now_ms()
    found = holder_of(conn, kind, key)
    if found is not None and found.name != me.name and found.live(now):
        return found
    mine = found if found is not None and found.name == me.name else None
    return _write(conn, kind, key, me, now, mine)


def renew(conn: apsw.Connection, kind: LeaseKind, key: str, me: Holder) -> Holder:
    """Renew ``me``'s lease in the caller's write transaction only if it is still ``me``'s
    (a fence: a lease another took, live or not, is not taken back); a row gone (deleted by
    hand) is taken back, as nobody else holds it. Returns who holds it now."""
    found = holder_of(conn, kind, key)
    if found is not None and found.name != me.name:
        return found
    return _write(conn, kind, key, me, now_ms(), found)


def give_back(conn: apsw.Connection, kind: LeaseKind, key: str, me: Holder) -> None:
    """Give the lease back in the caller's write transaction, if it is still ``me``'s."""
    found = holder_of(conn, kind, key)
    if found is not None and found.name == me.name:
        meta.drop(conn, key)


def _write(conn: apsw.Connection, kind: LeaseKind, key: str, me: Holder, now: int,
           mine: Holder | None) -> Holder:
    if mine is None:
        written = me._replace(since_ms=now, until_ms=now + me.lease_ms, renewed_ms=now,
                              renewals=0)
    else:
        written = me._replace(since_ms=mine.since_ms, until_ms=now + me.lease_ms,
                              renewed_ms=now, renewals=mine.renewals + 1)
    meta.put_json(conn, key, written.row(kind))
    return written


def _namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def process_of(pid: int) -> str:
    """``<pid namespace>/<start time>`` of process ``pid`` as this machine sees it; "" if no
    such process runs (or /proc does not say)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return ""
    namespace = _namespace()
    if not namespace or len(fields) <= 19 or fields[0] in (b"Z", b"X"):
        return ""  # a zombie is a process that ended, waiting for its parent to see it
    # Field 22 of stat (the 20th after the command's name): the start time in clock ticks.
    return f"{namespace}/{fields[19].decode()}"


# -- the kernel lock ----------------------------------------------------------------------
def open_lock(path: str) -> int:
    """The lock file, created 0600. O_CLOEXEC (Python's default): a child inherits it only
    when passed on purpose (the replicator's Litestream)."""
    return os.open(path, os.O_CREAT | os.O_RDWR, 0o600)


def try_lock(fd: int, *, shared: bool = False) -> bool:
    """Take the lock on ``fd`` without waiting; False if another holds it. Closing the
    file (in every process that has it) drops it."""
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise


def lock_held(path: str) -> bool:
    """Whether a process holds the lock on ``path`` now: a shared lock taken and dropped at
    once, so a look never refuses a taker for long (no file: nobody ever held it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except PermissionError:
        return True  # another user's holder: it cannot be asked, so nothing is claimed
    try:
        if try_lock(fd, shared=True):
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        return True
    finally:
        os.close(fd)
