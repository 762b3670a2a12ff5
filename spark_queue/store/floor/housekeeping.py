"""Housekeeping: what keeps a store bounded while it runs unattended, applied by the
store's own long-running processes, one at a time, in small steps off their hot paths.

One run does, in order: every topic's stored retention (never above the lowest saved
consumer offset), each queue's dead-letter retention, the sweep of jobs past their TTL,
a passive WAL checkpoint, and the record of the run. Each delete is a step of at most
``STEP_ROWS`` rows and ``STEP_BYTES`` bytes in its own write transaction
(:mod:`spark_queue.store.file.steps`), so a writer beside it waits for one step at most.
A row another SQLite client wrote against the rule (a topic's retention as text) is
skipped and named in the run's ``problems``; the rest of the run goes on.

- **When**: a run is due when the last one (meta key ``housekeeping_last_run``) started
  at least the store's ``housekeeping_interval_ms`` ago (meta key, default in
  :data:`spark_queue.setting_table.STORE_SETTING`; 0 switches self-applied housekeeping
  off). Checking it is one read transaction (two meta rows and the lease); only a
  due run writes.
- **The clock**: a recorded run start more than
  :data:`~spark_queue.defaults.CLOCK_SKEW_MS` in the future was written by a clock that
  was ahead and has been set back: it is stale (the run is due), so a clock set back
  delays housekeeping by that bound at most (the lease's rule says the same of a lease).
- **Who**: one process at a time, the holder of a timed lease (meta key
  ``housekeeping_lease``, :mod:`spark_queue.store.file.lease`: its row and its one
  staleness rule) taken in a short write transaction and renewed in every step's
  transaction; a holder killed mid-run stops renewing, and its lease runs out after
  ``lease_ms``. The lease saves work, it guards nothing: two runs at once would only
  delete the same prefixes in turn. So its rows record no process, and a killed holder's
  run is waited out rather than taken over at once.
- **The WAL**: every connection sets ``journal_size_limit``
  (:data:`spark_queue.defaults.WAL_LIMIT_BYTES`, :mod:`spark_queue.store.file.connection`),
  so a WAL that was checkpointed to its end is cut back to that size by the next write;
  the run's passive checkpoint and its last write (the record) do exactly that after a
  burst, unless a reader still holds an older snapshot (docs/operations.md, "The WAL").

:class:`Housekeeper` runs it in a daemon thread with a connection of its own (the
worker, the Producer, ``sqliteq metrics --serve``, the Kafka mirror's export, which
stops its own when it ends); :func:`keep_housekept` starts one per store file for the
rest of a process (a Spark query's driver-side reader); :func:`run_housekeeping` runs it
once, due or not (``sqliteq housekeeping --run`` from a timer); :class:`Housekeeping` is
``store.housekeeping``, the calls by hand.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import socket
import threading
from typing import Any, NamedTuple

import apsw

from spark_queue import defaults
from spark_queue.errors import (
    CorruptStoreError,
    OptionError,
    ReadOnlyStoreError,
    SparkQueueError,
    StoreBusyError,
    StoreNotFoundError,
)
from spark_queue.setting_table import STORE_SETTING
from spark_queue.store.file import lease, meta, replica_mark
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.connection import (
    HasStoreConnection,
    StoreConnection,
    now_ms,
    translated,
)
from spark_queue.store.file.daemon import Daemon
from spark_queue.store.file.opening import open_store_file
from spark_queue.store.file.sqlite_errors import translate_errors
from spark_queue.store.queues import dead_retention, queue_admin
from spark_queue.store.streams import consumer_positions, retention
from spark_queue.store.streams.retention import PruneResult

log = logging.getLogger("spark_queue.housekeeping")

_INTERVAL_KEY = meta.HOUSEKEEPING_INTERVAL_MS
_LAST_RUN_KEY = meta.HOUSEKEEPING_LAST_RUN_KEY
_LEASE_KEY = meta.HOUSEKEEPING_LEASE
#: How long a lease lasts unless renewed: a killed holder delays the next run by this.
LEASE_MS = 60_000
_KIND = lease.LeaseKind(LEASE_MS)
# How often a Housekeeper looks whether a run is due (one read of two meta rows).
_CHECK_EVERY_S = 5.0


class HeldBack(NamedTuple):
    """Events of ``topic`` retention would delete but ``consumer``'s saved offset keeps:
    ``events`` of them, the oldest ``held_ms`` older than the first event retention keeps.
    ``query``: the streaming query under the name whose position holds them (None: the
    name's own offset), last saved ``query_saved_ms`` ago."""

    topic: str
    consumer: str
    events: int
    held_ms: int
    query: str | None = None
    query_saved_ms: int | None = None


class HousekeepingRun(NamedTuple):
    """What one run did: when (ms since the epoch), what it deleted, what held it back."""

    started_ms: int
    ended_ms: int
    holder: str
    deleted_events: int
    deleted_dead_letters: int
    expired_jobs: int
    held_back: list[HeldBack]
    complete: bool  # False when the lease was lost mid-run (another process goes on)
    # Rows skipped because another SQLite client broke their rule, each said with its fix.
    problems: tuple[str, ...] = ()


class HousekeepingStatus(NamedTuple):
    """The store-wide setting, the last run recorded and the lease as they stand."""

    interval_ms: int
    last_run: HousekeepingRun | None
    lease_holder: str | None
    lease_until_ms: int | None


def interval_ms(conn: apsw.Connection) -> int:
    """The store's housekeeping interval (0: off); the declared default when never set."""
    text = meta.get(conn, _INTERVAL_KEY)
    if text is None:
        return int(STORE_SETTING[_INTERVAL_KEY].default or 0)
    try:
        return int(text)
    except ValueError:
        # A foreign writer's value: off, as the store cannot tell what was meant.
        log.warning("%s %r holds %r, not milliseconds: housekeeping is off",
                    meta.TABLE, _INTERVAL_KEY, text)
        return 0


def set_interval(conn: apsw.Connection, value_ms: int) -> None:
    """Store the housekeeping interval (in the caller's write transaction); 0 switches off."""
    setting = STORE_SETTING[_INTERVAL_KEY]
    check_int(value_ms, _INTERVAL_KEY, low=int(setting.low), error=OptionError,
              owner="housekeeping")
    meta.put(conn, _INTERVAL_KEY, str(value_ms))


def status(conn: apsw.Connection) -> HousekeepingStatus:
    """The setting, the last run and the lease, in the caller's read transaction."""
    held = lease.holder_of(conn, _KIND, _LEASE_KEY)
    return HousekeepingStatus(
        interval_ms(conn), _last_run(conn),
        None if held is None else held.name, None if held is None else held.until_ms,
    )


def held_back(conn: apsw.Connection, at_ms: int) -> list[HeldBack]:
    """Per topic, the consumer whose saved offset keeps events retention would delete at
    ``at_ms``, in the caller's read transaction (a topic with no retention: none)."""
    held = []
    for tid, name in retention.topic_ids(conn):
        try:
            plan = retention.plan(conn, tid, at_ms=at_ms)
        except CorruptStoreError:
            continue  # its stored retention breaks the rule: check and the runs name it
        if plan.held_by is None or plan.wanted <= plan.cut:
            continue
        oldest_ms = _ts_ms(conn, tid, plan.cut)
        kept_ms = _ts_ms(conn, tid, plan.wanted)
        since = at_ms if kept_ms is None else kept_ms
        holder = next((p for p in consumer_positions.readers_of(conn, plan.held_by, tid)
                       if p.next_offset <= plan.cut), None)
        held.append(HeldBack(name, plan.held_by, plan.wanted - plan.cut,
                             max(0, since - (since if oldest_ms is None else oldest_ms)),
                             None if holder is None else holder.reader,
                             None if holder is None else max(0, at_ms - holder.updated_ms)))
    return held


def _ts_ms(conn: apsw.Connection, tid: int, offset: int) -> int | None:
    row = conn.execute("SELECT ts_ms FROM sq_events WHERE topic_id = ? AND offset = ?",
                       (tid, offset)).fetchone()
    return None if row is None else int(row[0])


def run_housekeeping(
    file: StoreConnection, *, holder: str | None = None, lease_ms: int = LEASE_MS,
    due_only: bool = False, stop: threading.Event | None = None,
) -> HousekeepingRun | None:
    """Run housekeeping once if this caller gets the lease (and, with ``due_only``, if a run
    is due and housekeeping is on); None when it did not run. Each step is one transaction;
    ``stop`` set ends the run after the current step (recorded as not complete)."""
    holder = holder or _holder_name()
    if due_only:
        # A read: the check every process makes every few seconds never waits for a writer.
        with file.read() as conn:
            if not _due(conn, now_ms()) or _held_by_another(conn, holder, now_ms()):
                return None
    with file.write() as conn:
        if due_only and not _due(conn, now_ms()):
            return None
        if not _take_lease(conn, holder, lease_ms):
            return None
    started = now_ms()
    lost: list[bool] = []
    problems: list[str] = []

    def may_step(conn: apsw.Connection) -> bool:
        kept = (stop is None or not stop.is_set()) and _take_lease(conn, holder, lease_ms)
        if not kept:
            lost.append(True)
        return kept

    with file.read() as conn:
        ids = retention.topic_ids(conn)
    deleted = sum(r.deleted for r in retention.prune_topics(
        file, ids, at_ms=started, may_step=may_step, problems=problems))
    with file.read() as conn:
        held = held_back(conn, started)
    dead = expired = 0
    if not lost:
        dead = dead_retention.prune_dead_letters(file, at_ms=started, may_step=may_step,
                                                 problems=problems) or 0
    if not lost:
        expired = queue_admin.sweep_expired(file, now_ms=started, may_step=may_step,
                                            problems=problems)
    with translate_errors(file.path):
        # Passive: never waits for a reader, never holds the write lock. A WAL it checkpoints
        # to its end is cut back to journal_size_limit by the next write: the record below.
        # A replicated store's WAL is Litestream's to checkpoint (replica_mark.owns_wal).
        if not replica_mark.owns_wal(file.conn):
            file.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    run = HousekeepingRun(started, now_ms(), holder, deleted, dead, expired, held, not lost,
                          tuple(problems))
    with file.write() as conn:
        if _take_lease(conn, holder, lease_ms):
            meta.put_json(conn, _LAST_RUN_KEY, _run_json(run))
            lease.give_back(conn, _KIND, _LEASE_KEY, _me(holder, lease_ms))
    if deleted or dead or expired or held:
        log.info("housekeeping: %d events, %d dead letters, %d expired jobs deleted%s",
                 deleted, dead, expired,
                 "".join(f"; {h.consumer!r} holds back {h.events} events of {h.topic!r}"
                         + ("" if h.query is None else
                            f" (its query {h.query!r}, saved {h.query_saved_ms} ms ago)")
                         for h in held))
    for problem in problems:
        log.warning("housekeeping skipped a row: %s", problem)
    return run


class Housekeeper(Daemon):
    """Housekeeping for one store file in a daemon thread with its own connection.

    ``start()`` returns at once; every ``check_every_s`` the thread looks whether a run is
    due (:func:`run_housekeeping` with ``due_only``). Errors never reach the owner: a
    busy store is tried again at the next check, a store it cannot write (read-only
    file) ends the thread with one log line. ``stop()`` waits for the current step.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, check_every_s: float = _CHECK_EVERY_S,
        lease_ms: int = LEASE_MS, busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS,
    ) -> None:
        super().__init__(os.fspath(path), every_s=check_every_s, name="sq-housekeeping",
                         busy_timeout_ms=busy_timeout_ms)
        self.check_every_s = check_every_s
        self.lease_ms = lease_ms
        self.holder = _holder_name()
        self.runs = 0  # runs this housekeeper did (tests wait on it)

    def open(self) -> StoreConnection:
        return _open(self.path, self.busy_timeout_ms)

    def turn(self, file: StoreConnection) -> None:
        if run_housekeeping(file, holder=self.holder, lease_ms=self.lease_ms,
                            due_only=True, stop=self._stop) is not None:
            self.runs += 1

    def failed(self, exc: Exception) -> bool:
        if isinstance(exc, (ReadOnlyStoreError, StoreNotFoundError)):
            log.info("housekeeping of %r stops: %s", self.path, exc)
            return True
        if isinstance(exc, StoreBusyError):
            log.debug("housekeeping of %r: store busy, trying at the next check", self.path)
        elif isinstance(exc, SparkQueueError):
            log.warning("housekeeping of %r failed: %s", self.path, exc)
        else:  # a daemon's error must not end its owner
            log.exception("housekeeping of %r failed", self.path)
        return False


@translated
class Housekeeping:
    """``store.housekeeping``: housekeeping of a store file called by hand (its interval,
    its last run, a run now). A setting or a look is one transaction, opened here like every
    Store and Topic method's; a run, a prune of every topic and a TTL sweep are steps of one
    transaction each, so they take the file, not a connection.

    >>> store.housekeeping.set_interval(60_000)          # doctest: +SKIP
    >>> store.housekeeping.status().last_run
    """

    def __init__(self, store: HasStoreConnection) -> None:
        self.file = store.file

    def __repr__(self) -> str:
        return f"Housekeeping({self.file.path!r})"

    def status(self) -> HousekeepingStatus:
        """The housekeeping interval, its last run and its lease's holder (one read)."""
        with self.file.read() as conn:
            return status(conn)

    def held_back(self) -> list[HeldBack]:
        """Events each consumer's saved offset keeps from retention now, per topic (one read)."""
        with self.file.read() as conn:
            return held_back(conn, self.file.now_ms())

    def set_interval(self, interval_ms: int) -> None:
        """How often long-running processes run housekeeping (store-wide, one transaction;
        0: never)."""
        with self.file.write() as conn:
            set_interval(conn, interval_ms)

    def run(self) -> HousekeepingRun | None:
        """Run housekeeping now unless another process holds its lease (then None)."""
        return run_housekeeping(self.file)

    def prune(
        self, *, retention_ms: int | None = None, retention_rows: int | None = None,
        force: bool = False, at_ms: int | None = None, **deprecated: int | None,
    ) -> list[PruneResult]:
        """Apply retention (``retention_ms``, ``retention_rows`` given, else each topic's own)
        to every topic, in write transactions of at most 10,000 events and 8 MiB; never at
        or above the lowest saved consumer offset unless ``force``. One topic:
        ``store.topic(name).prune()``."""
        age, rows = retention.retention_limits("prune", retention_ms, retention_rows, deprecated)
        return retention.prune(self.file, None, retention_ms=age, retention_rows=rows,
                               force=force, at_ms=at_ms)

    def sweep_expired(self) -> int:
        """Delete jobs past their TTL in every queue, in steps (one transaction each)."""
        return queue_admin.sweep_expired(self.file)


_PROCESS_HOUSEKEEPERS: dict[str, Housekeeper] = {}
_PROCESS_LOCK = threading.Lock()


def keep_housekept(path: str | os.PathLike[str]) -> Housekeeper:
    """Start (once per file and process) a :class:`Housekeeper` that lives as long as the
    process: for a long-lived process with no close of its own (a Spark query's
    driver-side reader, a Kafka mirror). Cheap to call again; safe from any thread."""
    key = os.path.realpath(os.fspath(path))
    with _PROCESS_LOCK:
        keeper = _PROCESS_HOUSEKEEPERS.get(key)
        if keeper is None or not keeper.alive:
            if not _PROCESS_HOUSEKEEPERS:
                atexit.register(_stop_all)
            keeper = _PROCESS_HOUSEKEEPERS[key] = Housekeeper(key).start()
        return keeper


def _stop_all() -> None:
    with _PROCESS_LOCK:
        keepers = list(_PROCESS_HOUSEKEEPERS.values())
        _PROCESS_HOUSEKEEPERS.clear()
    for keeper in keepers:
        keeper.stop()


def _open(path: str, busy_timeout_ms: int) -> StoreConnection:
    return open_store_file(path, create=False, busy_timeout_ms=busy_timeout_ms)


def _holder_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


def _due(conn: apsw.Connection, now: int) -> bool:
    every = interval_ms(conn)
    if every <= 0:
        return False
    last = meta.get_json(conn, _LAST_RUN_KEY)
    if last is None:
        return True
    started = _int(last.get("started_ms"))
    # A start in the future beyond the bound: recorded by a clock since set back (stale).
    return now - started >= every or started > now + defaults.CLOCK_SKEW_MS


def _me(holder: str, lease_ms: int) -> lease.Holder:
    return lease.new_claim(_KIND, name=holder, lease_ms=lease_ms, record_process=False)


def _held_by_another(conn: apsw.Connection, holder: str, now: int) -> bool:
    """Whether another holder's live lease stands (caller's snapshot)."""
    return lease.live_other(conn, _KIND, _LEASE_KEY, _me(holder, LEASE_MS), now) is not None


def _take_lease(conn: apsw.Connection, holder: str, lease_ms: int) -> bool:
    """Take or renew the lease in the caller's write transaction; False if another holds it."""
    return lease.acquire(conn, _KIND, _LEASE_KEY, _me(holder, lease_ms)).name == holder


def _int(value: Any) -> int:
    """A recorded time as an integer; a foreign writer's value as 0 (long past)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _run_json(run: HousekeepingRun) -> dict[str, Any]:
    record = run._asdict()
    record["held_back"] = [h._asdict() for h in run.held_back]
    record["problems"] = list(run.problems)
    return record


def _last_run(conn: apsw.Connection) -> HousekeepingRun | None:
    record = meta.get_json(conn, _LAST_RUN_KEY)
    if record is None:
        return None
    with contextlib.suppress(KeyError, TypeError, ValueError):
        held = [HeldBack(str(h["topic"]), str(h["consumer"]), int(h["events"]),
                         int(h["held_ms"]), h.get("query"), h.get("query_saved_ms"))
                for h in record["held_back"]]
        return HousekeepingRun(
            int(record["started_ms"]), int(record["ended_ms"]), str(record["holder"]),
            int(record["deleted_events"]), int(record["deleted_dead_letters"]),
            int(record["expired_jobs"]), held, bool(record["complete"]),
            tuple(str(p) for p in record.get("problems", ())),
        )
    return None
