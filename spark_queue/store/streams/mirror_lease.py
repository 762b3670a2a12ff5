"""One exporter per copy: the lease on a copy's hold, so two exports of one prefix (a
``--follow`` service and a hand-run ``kafka export``, or two instances) never both produce
into the same Kafka partitions.

The lease is a timed lease of :mod:`spark_queue.store.file.lease` (its one staleness rule,
its row) under the meta key ``mirror_lease/<hold>``, its holder named by a random token,
taken in a write transaction before the exporter reads a bound or asks Kafka anything,
renewed every third of :data:`MIRROR_LEASE_MS` by a daemon thread with a connection of its
own (:class:`LeaseKeeper`, so a Kafka call that blocks for minutes cannot let it lapse), and
deleted when the exporter ends. Another exporter of the same hold is refused naming the
holder (:class:`~spark_queue.errors.MirrorLeaseError`) while the lease runs. A holder killed
(SIGKILL, a power cut) stops renewing: an exporter on the same machine sees at once that its
process is gone (the row records it), any other once the lease runs out.

The lease is a fence as well: every write of the hold checks in its own transaction that
the lease is still this exporter's (:func:`check_lease`, :func:`spark_queue.store.file.
lease.renew`), so an exporter that lost it (paused longer than the lease, then taken over)
saves no position and stops.
"""

from __future__ import annotations

import logging

import apsw

from spark_queue import defaults
from spark_queue.errors import MirrorLeaseError, SparkQueueError, StoreBusyError
from spark_queue.store.file import lease, meta
from spark_queue.store.file.connection import StoreConnection
from spark_queue.store.file.daemon import Daemon
from spark_queue.store.file.lease import Holder

#: How long a lease lasts unless renewed: a killed exporter of another machine blocks the
#: next one this long.
MIRROR_LEASE_MS = 30_000
#: The rows have named their holder ``token`` since the first release with a mirror.
_KIND = lease.LeaseKind(MIRROR_LEASE_MS, holder_field="token")
log = logging.getLogger("spark_queue.mirror_lease")


def new_holder(lease_ms: int) -> Holder:
    """This process's claim on a lease (not taken yet)."""
    return lease.new_claim(_KIND, lease_ms=lease_ms)


def lease_of(conn: apsw.Connection, hold: str) -> Holder | None:
    """The lease on ``hold``'s copy as its row says; None if none or unreadable."""
    return lease.holder_of(conn, _KIND, meta.mirror_lease_key(hold))


def take_lease(conn: apsw.Connection, hold: str, me: Holder) -> Holder:
    """Take ``hold``'s lease for ``me`` in the caller's write transaction; returns the lease
    as written. MirrorLeaseError names the live holder if another has it."""
    found = lease.acquire(conn, _KIND, meta.mirror_lease_key(hold), me)
    if found.name != me.name:
        raise MirrorLeaseError(
            f"another export of this copy runs: {found.describe()} holds the lease of "
            f"{hold!r}, the position of the Kafka copy under this prefix. Two exports of one "
            "prefix would both produce into the same Kafka partitions. Stop that one first "
            "(a killed one's lease runs out by itself), or export to another --prefix."
        )
    return found


def check_lease(conn: apsw.Connection, hold: str, me: Holder) -> Holder:
    """In the caller's write transaction: renew the lease, MirrorLeaseError unless it is
    still ``me``'s."""
    found = lease.renew(conn, _KIND, meta.mirror_lease_key(hold), me)
    if found.name != me.name:
        raise MirrorLeaseError(
            f"this export lost its lease of {hold!r} to {found.describe()}: it was not renewed "
            f"within {me.lease_ms} ms (the process was paused or the store busy that long). "
            "It stops here, saving no further position; the copy holds what the hold names "
            "and the other export goes on from there."
        )
    return found


def release_lease(conn: apsw.Connection, hold: str, me: Holder) -> None:
    """Give the lease back in the caller's write transaction, if it is still ``me``'s."""
    lease.give_back(conn, _KIND, meta.mirror_lease_key(hold), me)


class LeaseKeeper(Daemon):
    """Renews a taken lease every third of its length from a daemon thread with a connection
    of its own, until :meth:`stop`, or until it finds the lease another's (then the holder's
    next :func:`check_lease` refuses). A busy store is tried again at the next turn."""

    def __init__(self, path: str, hold: str, me: Holder,
                 busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS) -> None:
        super().__init__(path, every_s=me.lease_ms / 3000, name="sq-mirror-lease",
                         busy_timeout_ms=busy_timeout_ms)
        self.hold = hold
        self.me = me

    def turn(self, file: StoreConnection) -> None:
        with file.write() as conn:
            check_lease(conn, self.hold, self.me)

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
