"""One exporter per copy: the lease on a copy's hold, so two exports of one prefix (a
``--follow`` service and a hand-run ``kafka export``, or two instances) never both produce
into the same Kafka partitions.

The lease is a row of the store's meta table (key ``mirror_lease/<hold>``, a JSON object: a random
token, the holder's host and process id, since when it holds it, until when, its length and
how often it was renewed), taken in a write transaction before the exporter reads a bound
or asks Kafka anything, renewed every third of :data:`MIRROR_LEASE_MS` by a daemon thread
with a connection of its own (:class:`LeaseKeeper`, so a Kafka call that blocks for minutes
cannot let it lapse), and deleted when the exporter ends. Another exporter of the same hold
is refused naming the holder (:class:`~spark_queue.errors.MirrorLeaseError`) while the lease
runs. A holder killed (SIGKILL, a power cut) stops renewing: an exporter on the same machine
sees at once that its process is gone (same host and process namespace, and no process of
that id started at that time: a rerun right after a kill goes ahead), any other once the
lease runs out. A lease whose end lies further ahead than its own length is stale too: only
a clock set back since it was written puts it there.

The lease is a fence as well: every write of the hold checks in its own transaction that
the lease is still this exporter's (:func:`check_lease`), so an exporter that lost it (paused
longer than the lease, then taken over) saves no position and stops.
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import UTC, datetime
from typing import NamedTuple

import apsw

from spark_queue import defaults
from spark_queue.errors import MirrorLeaseError, SparkQueueError, StoreBusyError
from spark_queue.store.file import meta
from spark_queue.store.file.connection import StoreConnection, now_ms
from spark_queue.store.file.daemon import Daemon

#: How long a lease lasts unless renewed: a killed exporter blocks the next one this long.
MIRROR_LEASE_MS = 30_000
log = logging.getLogger("spark_queue.mirror_lease")


class LeaseHolder(NamedTuple):
    """Who holds a copy's lease, as its row says."""

    token: str  # this holder's own, random: two exporters of one process differ
    host: str
    pid: int
    since_ms: int
    until_ms: int
    lease_ms: int
    renewals: int
    process: str = ""  # its pid namespace and start time ("" where /proc does not say)

    def describe(self) -> str:
        return (f"process {self.pid} on host {self.host!r} since {_utc(self.since_ms)} "
                f"(its lease runs until {_utc(self.until_ms)} unless renewed)")

    def live(self, now: int) -> bool:
        """Whether it still holds: renewed in time, not from a clock set back since, and
        (as far as this machine can tell) its process still runs."""
        return now < self.until_ms <= now + self.lease_ms and not self.gone()

    def gone(self) -> bool:
        """Whether its process certainly ended: a process of this machine's (same host and
        pid namespace) that no longer runs, or whose id another process took since."""
        if not self.process or self.host != socket.gethostname():
            return False
        namespace = self.process.split("/")[0]
        if namespace != _namespace():
            return False  # another container's process: its ids are not ours to look up
        return _process_of(self.pid) != self.process


def _utc(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _process_of(pid: int) -> str:
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


def new_holder(lease_ms: int) -> LeaseHolder:
    """This process's claim on a lease (not taken yet)."""
    now = now_ms()
    pid = os.getpid()
    return LeaseHolder(os.urandom(8).hex(), socket.gethostname(), pid, now, now + lease_ms,
                       lease_ms, 0, _process_of(pid))


def lease_of(conn: apsw.Connection, hold: str) -> LeaseHolder | None:
    """The lease on ``hold``'s copy as its row says; None if none, or if another SQLite client
    wrote something unreadable there (the next take replaces it)."""
    found = meta.get_json(conn, meta.mirror_lease_key(hold))
    if found is None:
        return None
    try:
        return LeaseHolder(str(found["token"]), str(found["host"]), int(found["pid"]),
                           int(found["since_ms"]), int(found["until_ms"]),
                           int(found["lease_ms"]), int(found["renewals"]),
                           str(found.get("process", "")))
    except (TypeError, ValueError, KeyError):
        return None


def _write(conn: apsw.Connection, hold: str, holder: LeaseHolder) -> None:
    meta.put_json(conn, meta.mirror_lease_key(hold), holder._asdict())


def take_lease(conn: apsw.Connection, hold: str, me: LeaseHolder) -> LeaseHolder:
    """Take ``hold``'s lease for ``me`` in the caller's write transaction; returns the lease
    as written. MirrorLeaseError names the live holder if another has it."""
    now = now_ms()
    found = lease_of(conn, hold)
    if found is not None and found.token != me.token and found.live(now):
        raise MirrorLeaseError(
            f"another export of this copy runs: {found.describe()} holds the lease of "
            f"{hold!r}, the position of the Kafka copy under this prefix. Two exports of one "
            "prefix would both produce into the same Kafka partitions. Stop that one first "
            "(a killed one's lease runs out by itself), or export to another --prefix."
        )
    taken = me._replace(since_ms=now, until_ms=now + me.lease_ms, renewals=0)
    _write(conn, hold, taken)
    return taken


def check_lease(
    conn: apsw.Connection, hold: str, me: LeaseHolder, *, renew: bool
) -> LeaseHolder:
    """In the caller's transaction (a write one if ``renew``): MirrorLeaseError unless the
    lease is still ``me``'s; renewed if asked. A lease row gone (deleted by hand) is taken
    back: nobody else holds it."""
    found = lease_of(conn, hold)
    if found is not None and found.token != me.token:
        raise MirrorLeaseError(
            f"this export lost its lease of {hold!r} to {found.describe()}: it was not renewed "
            f"within {me.lease_ms} ms (the process was paused or the store busy that long). "
            "It stops here, saving no further position; the copy holds what the hold names "
            "and the other export goes on from there."
        )
    current = found or me
    if not renew:
        return current
    renewed = current._replace(until_ms=now_ms() + me.lease_ms, renewals=current.renewals + 1)
    _write(conn, hold, renewed)
    return renewed


def release_lease(conn: apsw.Connection, hold: str, me: LeaseHolder) -> None:
    """Give the lease back in the caller's write transaction, if it is still ``me``'s."""
    found = lease_of(conn, hold)
    if found is not None and found.token == me.token:
        meta.drop(conn, meta.mirror_lease_key(hold))


class LeaseKeeper(Daemon):
    """Renews a taken lease every third of its length from a daemon thread with a connection
    of its own, until :meth:`stop`, or until it finds the lease another's (then the holder's
    next :func:`check` refuses). A busy store is tried again at the next turn."""

    def __init__(self, path: str, hold: str, me: LeaseHolder,
                 busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS) -> None:
        super().__init__(path, every_s=me.lease_ms / 3000, name="sq-mirror-lease",
                         busy_timeout_ms=busy_timeout_ms)
        self.hold = hold
        self.me = me

    def turn(self, file: StoreConnection) -> None:
        with file.write() as conn:
            check_lease(conn, self.hold, self.me, renew=True)

    def failed(self, exc: Exception) -> bool:
        if isinstance(exc, MirrorLeaseError):
            log.warning("%s", exc)
            return True
        if isinstance(exc, StoreBusyError):
            log.debug("lease %r: store busy, renewing at the next turn", self.hold)
        elif isinstance(exc, SparkQueueError):
            log.warning("lease %r not renewed: %s", self.hold, exc)
        else:
            raise exc
        return False
