"""Run a handler function over a queue: claim, heartbeat, ack/nack, graceful shutdown.

::

    def send_email(job):            # raises to fail the job
        deliver(job.payload)

    Worker("app.sqlite", "emails", send_email, concurrency=4).run()

or ``sqliteq worker app.sqlite mymodule:send_email --queue emails --concurrency 4``.

Threads: ``concurrency`` slot threads each open their own
:class:`~spark_queue.store.Store` (a connection never crosses threads), claim
up to ``batch_size`` jobs, run the handler on each in turn and ack the batch;
a handler exception nacks the job with its traceback as the error (retry with
backoff, dead letters at max attempts). One heartbeat thread extends the
leases of every claimed, unacked job every ``heartbeat_ms`` (a third of the
lease by default), so long jobs keep their lease, and every 30 s deletes
jobs past their TTL.

Delivery is at-least-once: a job whose worker dies is claimed again after its
lease expires. Handlers should be idempotent.

Idle slots wait by watching ``PRAGMA data_version`` (it changes when any
other connection commits) with a back-off from 1 ms to 50 ms, and claim at
least every ``idle_poll_max_ms`` so delayed jobs and expired leases are picked
up without a write to wake them.

Held slots (the queue is paused, at its ``max_leased``, or out of rate-limit
tokens: see :mod:`spark_queue.store.queues.controls`) do not claim: they read
the queue's :meth:`~spark_queue.store.Queue.admission` and sleep until it may
have changed, that is until another connection commits (an ack frees a slot, a
resume or a new setting lands) or until the time it names passes (the next
token, the earliest lease expiry), at most ``idle_poll_max_ms``. Each look is
one read, never the write lock, and a refused claim writes nothing, so held
workers do not wake each other.

Shutdown: SIGTERM or SIGINT (handlers only set a flag) or :meth:`Worker.stop`
stops claiming; claimed jobs not started yet are released at once (their
attempt not counted); running jobs get ``grace_ms`` to finish and be acked.
When the grace period ends, leases still held are released (the attempt
counted) and :meth:`Worker.run` returns, leaving the handler threads behind
as daemons: the process should exit (the CLI does). A second signal ends the
grace period at once. A busy or locked store is retried with back-off, never
fatal.

Anything else a slot or the heartbeat thread meets (a store error, a bug)
stops the worker the same way, releases every lease still held, so the jobs
are ready at once rather than when their lease expires, and makes
:meth:`Worker.run` raise :class:`~spark_queue.errors.WorkerCrashedError`: a
worker never idles on with dead threads, nor exits as if all went well.

Each handler failure is one warning line: the job, the exception's last line,
and ``retry in ...`` or ``dead-lettered``. An unknown queue is an error
listing the store's queues unless ``create_queue`` (a typo must not make a
new, forever empty queue).
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from spark_queue import defaults
from spark_queue.errors import (
    QueueConfigError,
    StoreBusyError,
    UnknownQueueError,
    WorkerCrashedError,
)
from spark_queue.store import Job, QueueStats, Store, check_int

log = logging.getLogger("spark_queue.worker")

T = TypeVar("T")
Handler = Callable[[Job], Any]

_IDLE_STEP_MIN_S = 0.001
_IDLE_STEP_MAX_S = 0.05
_BUSY_STEP_MAX_S = 1.0
# How often the heartbeat thread deletes jobs past their TTL (claims skip them anyway).
_SWEEP_EVERY_S = 30.0
# The store's bound on integers it binds (store/queues/jobs.py): a lease added to epoch ms
# in SQL stays within 64 bits.
MAX_LEASE_MS = MAX_BATCH_SIZE = (1 << 62) - 1
# What a thread can wait for at once (threading.Event.wait refuses more).
MAX_WAIT_MS = int(threading.TIMEOUT_MAX * 1000)


@dataclass
class WorkerStats:
    """What one :meth:`Worker.run` did."""

    acked: int = 0
    # Handler failures (attempts): a job that failed twice counts 2.
    failed: int = 0
    released: int = 0
    lost_leases: int = 0
    # Times a slot found the queue paused or at a limit and waited instead of claiming.
    held: int = 0
    # Jobs (not attempts) that failed and were given a retry, or moved to the dead letters.
    retried: int = 0
    dead_lettered: int = 0

    def as_dict(self) -> dict[str, int]:
        """The exit summary: jobs acked, retried and dead-lettered, then the rest."""
        return {
            "acked": self.acked,
            "retried": self.retried,
            "dead_lettered": self.dead_lettered,
            "released": self.released,
            "lost_leases": self.lost_leases,
            "held": self.held,
        }


class _InFlight:
    """Claimed, unacked jobs of this worker (for heartbeats and shutdown), under a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[int, tuple[Job, bool]] = {}

    def add(self, jobs: list[Job]) -> None:
        with self._lock:
            for job in jobs:
                self._jobs[job.id] = (job, False)

    def start(self, job: Job) -> None:
        with self._lock:
            self._jobs[job.id] = (job, True)

    def discard(self, jobs: list[Job]) -> None:
        with self._lock:
            for job in jobs:
                self._jobs.pop(job.id, None)

    def snapshot(self) -> list[tuple[Job, bool]]:
        with self._lock:
            return list(self._jobs.values())

    def take_all(self) -> list[tuple[Job, bool]]:
        with self._lock:
            taken = list(self._jobs.values())
            self._jobs.clear()
            return taken


class Worker:
    """A consumer loop over one queue of one store file (see the module docstring)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        queue: str,
        handler: Handler,
        *,
        concurrency: int = 1,
        batch_size: int = 1,
        lease_ms: int | None = None,
        heartbeat_ms: int | None = None,
        grace_ms: int = defaults.WORKER_GRACE_MS,
        idle_poll_max_ms: int = 500,
        until_empty: bool = False,
        on_wait: Callable[[QueueStats], None] | None = None,
        durability: str = defaults.DURABILITY,
        busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS,
        create_queue: bool = False,
    ) -> None:
        for name, value, low, high in (
            ("concurrency", concurrency, 1, None),
            ("batch_size", batch_size, 1, MAX_BATCH_SIZE),
            ("grace_ms", grace_ms, 0, MAX_WAIT_MS),
            ("idle_poll_max_ms", idle_poll_max_ms, 1, MAX_WAIT_MS),
            ("lease_ms", lease_ms, 1, MAX_LEASE_MS),
            ("heartbeat_ms", heartbeat_ms, 1, MAX_WAIT_MS),
        ):
            if value is None and name in ("lease_ms", "heartbeat_ms"):
                continue
            check_int(value, name, low=low, high=high, error=QueueConfigError, owner="worker")
        self.path = os.fspath(path)
        self.queue = queue
        self.handler = handler
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.lease_ms = lease_ms
        self.heartbeat_ms = heartbeat_ms
        self.grace_ms = grace_ms
        self.idle_poll_max_ms = idle_poll_max_ms
        self.until_empty = until_empty
        self.create_queue = create_queue
        # Called from idle slots (any thread) with the stats that kept
        # until_empty from exiting: the CLI shows delayed jobs waited for.
        self.on_wait = on_wait
        self._durability = durability
        self._busy_timeout_ms = busy_timeout_ms
        self.stats = WorkerStats()
        self._stats_lock = threading.Lock()
        self._stopping = threading.Event()
        self._finished = threading.Event()
        self._signal: int | None = None
        self._signals_seen = 0
        self._inflight = _InFlight()
        self._slots_done = 0
        self._crash: tuple[str, BaseException] | None = None
        self._retried_ids: set[int] = set()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)

    # -- public --------------------------------------------------------------
    def stop(self) -> None:
        """Ask the worker to stop (thread-safe): stop claiming, finish within the grace period."""
        self._stopping.set()
        self._wake()

    def run(self) -> WorkerStats:
        """Run until stopped (signal or :meth:`stop`) or, with ``until_empty``, the queue is empty.

        Installs SIGTERM/SIGINT handlers when called from the main thread and
        restores the previous ones on return. An unknown queue is an
        :class:`UnknownQueueError` listing the store's queues, unless
        ``create_queue``. If a slot or the heartbeat thread crashes, the worker
        stops as for a signal, releases every lease it holds and raises
        :class:`WorkerCrashedError` (its ``stats`` say what was done).
        """
        with self._open_store() as store:
            q = store.queue(self.queue)
            if self.create_queue:
                # Creates the queue with the defaults if missing, so stats and metrics show it.
                config = self._retry(q.configure)
            elif not self._retry(q.exists):
                names = [c.name for c in self._retry(store.queues)]
                known = f"its queues are {', '.join(map(repr, names))}" if names else (
                    "it has no queues yet")
                raise UnknownQueueError(
                    f"queue {self.queue!r} does not exist in {self.path!r} ({known}); check "
                    "the name, or let the worker create it (`sqliteq worker --create`, "
                    "Worker(create_queue=True))."
                )
            else:
                config = self._retry(q.config)
        lease = self.lease_ms or config.visibility_timeout_ms
        heartbeat_ms = min(self.heartbeat_ms or max(1, lease // 3), MAX_WAIT_MS)
        heartbeat_s = heartbeat_ms / 1000
        with self._signals_installed():
            slots = [
                threading.Thread(target=self._slot, args=(i,), name=f"sq-worker-{i}", daemon=True)
                for i in range(self.concurrency)
            ]
            beat = threading.Thread(
                target=self._heartbeat, args=(heartbeat_s,), name="sq-heartbeat", daemon=True
            )
            for thread in slots:
                thread.start()
            beat.start()
            log.info("worker on queue %r: %d slots, lease %d ms", self.queue, len(slots), lease)
            clean = self._supervise(slots)
            released: int | None = 0
            self._finished.set()
            if clean:
                beat.join()
            # After a crash the dead slot's jobs are still held: give them back too.
            if not clean or self._crash is not None:
                released = self._release_after()
        if self._crash is not None:
            where, exc = self._crash
            given_back = (
                f"{released} leased jobs were released (back to ready), the others finished "
                "first" if released is not None else
                "its leases could not be released and will expire"
            )
            raise WorkerCrashedError(
                f"worker on queue {self.queue!r} stopped: {where} crashed with "
                f"{_last_line(exc)}; {given_back}. Rerun with -v for the traceback.",
                self.stats,
            ) from exc
        return self.stats

    def _release_after(self) -> int | None:
        """Release what is still held; after a crash a store that fails again is said, not
        raised (the crash is the error to report). None if the release failed."""
        try:
            return self._release_leftovers()
        except Exception as exc:
            if self._crash is None:
                raise
            log.error("could not release the leases at shutdown: %s", _last_line(exc))
            return None

    # -- main thread -----------------------------------------------------------
    def _supervise(self, slots: list[threading.Thread]) -> bool:
        """Wait for the slots to end, or the grace period after a stop; True if they all ended."""
        selector = selectors.DefaultSelector()
        selector.register(self._wake_r, selectors.EVENT_READ)
        deadline: float | None = None
        try:
            while True:
                if self._signal is not None and not self._stopping.is_set():
                    log.info("signal %d: stopping, grace %d ms", self._signal, self.grace_ms)
                    self._stopping.set()
                if self._stopping.is_set() and deadline is None:
                    deadline = time.monotonic() + self.grace_ms / 1000
                if self._signals_seen > 1:
                    deadline = time.monotonic()
                # A counter, not is_alive(): a slot wakes us just before its thread ends.
                with self._stats_lock:
                    if self._slots_done == len(slots):
                        return True
                timeout = None if deadline is None else deadline - time.monotonic()
                if timeout is not None and timeout <= 0:
                    log.warning("grace period of %d ms ended with jobs running", self.grace_ms)
                    return False
                selector.select(timeout)
                with contextlib.suppress(BlockingIOError):
                    while self._wake_r.recv(4096):
                        pass
        finally:
            selector.close()

    @contextlib.contextmanager
    def _signals_installed(self):
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
        old_fd = signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False)

        def on_signal(signum: int, frame: Any) -> None:
            # Only set flags: the supervisor loop (woken through the wakeup fd) acts.
            self._signal = signum
            self._signals_seen += 1

        try:
            for sig in previous:
                signal.signal(sig, on_signal)
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            signal.set_wakeup_fd(old_fd)

    def _release_leftovers(self) -> int:
        """Give back every lease still held; the number released."""
        leftovers = self._inflight.take_all()
        if not leftovers:
            return 0
        started = [job for job, running in leftovers if running]
        waiting = [job for job, running in leftovers if not running]
        released = 0
        with self._open_store() as store:
            q = store.queue(self.queue)
            for jobs, counted in ((started, True), (waiting, False)):
                if jobs:
                    result = self._retry(partial(q.release, jobs, count_attempt=counted))
                    self._count(released=len(result.done))
                    released += len(result.done)
        log.warning(
            "released %d leases at shutdown (%d were running)", len(leftovers), len(started)
        )
        return released

    def _crashed(self, where: str, exc: BaseException) -> None:
        """A thread died: stop the worker as for a signal; run() releases and raises."""
        with self._stats_lock:
            if self._crash is None:
                self._crash = (where, exc)
        log.error("%s crashed: %s; stopping the worker", where, _last_line(exc))
        log.debug("%s traceback", where, exc_info=exc)
        self.stop()

    # -- slot threads ----------------------------------------------------------
    def _slot(self, index: int) -> None:
        try:
            with self._open_store() as store:
                self._slot_loop(store, index)
        except Exception as exc:
            self._crashed(f"worker slot {index}", exc)
        finally:
            with self._stats_lock:
                self._slots_done += 1
            self._wake()

    def _slot_loop(self, store: Store, index: int) -> None:
        q = store.queue(self.queue)
        jobs: list[Job] = []
        while not self._stopping.is_set():
            if not jobs:
                jobs = self._retry(lambda: q.claim(self.batch_size, lease_ms=self.lease_ms))
            if not jobs:
                if self._held_wait(store, q):
                    continue
                if self.until_empty and self._queue_drained(q):
                    return
                self._idle_wait(store)
                continue
            self._inflight.add(jobs)
            done: list[Job] = []
            for position, job in enumerate(jobs):
                if self._stopping.is_set():
                    rest = jobs[position:]
                    result = self._retry(partial(q.release, rest))
                    self._inflight.discard(rest)
                    self._count(released=len(result.done))
                    break
                self._inflight.start(job)
                try:
                    self.handler(job)
                except Exception as exc:
                    error = traceback.format_exc()
                    nacked = self._retry(partial(q.nack_many, [job], error))
                    self._inflight.discard([job])
                    self._failed(job, exc, nacked)
                else:
                    done.append(job)
            jobs = []
            if done:
                if self._stopping.is_set():
                    result = self._retry(partial(q.ack_many, done))
                else:
                    # Ack this batch and claim the next in one transaction: one commit saved.
                    result, jobs = self._retry(
                        partial(q.ack_and_claim, done, self.batch_size, lease_ms=self.lease_ms)
                    )
                self._inflight.discard(done)
                self._count(acked=len(result.done), lost=len(result.rejected))
                if result.rejected:
                    log.warning(
                        "lost the lease of jobs %s before ack: they will run again", result.rejected
                    )
        if jobs:  # claimed together with the last ack, then asked to stop: never started
            result = self._retry(lambda: q.release(jobs))
            self._count(released=len(result.done))

    def _queue_drained(self, q) -> bool:
        stats = self._retry(q.stats)
        drained = stats.ready + stats.leased + stats.delayed == 0
        if not drained and self.on_wait is not None:
            self.on_wait(stats)
        return drained

    def _held_wait(self, store: Store, q) -> bool:
        """If the queue holds claims back, wait until that may have changed; True if it did."""
        admission = self._retry(q.admission)
        if admission.held_by is None:
            return False
        self._count(held=1)
        # A pause is an operator's act worth a line; limits are hit all the time.
        log.log(
            logging.INFO if admission.held_by == "paused" else logging.DEBUG,
            "queue %r holds claims back (%s): waiting",
            self.queue,
            admission.held_by,
        )
        while admission.held_by is not None and not self._stopping.is_set():
            wait_ms = self.idle_poll_max_ms
            if admission.retry_after_ms is not None:
                wait_ms = min(wait_ms, admission.retry_after_ms)
            self._wait_for_commit(store, wait_ms / 1000)
            admission = self._retry(q.admission)
        return True

    def _wait_for_commit(self, store: Store, timeout_s: float) -> None:
        """Sleep until another connection commits or ``timeout_s`` passes (or a stop)."""
        version = store.data_version()
        step = _IDLE_STEP_MIN_S
        end = time.monotonic() + timeout_s
        while not self._stopping.wait(min(step, max(0.0, end - time.monotonic()))):
            if store.data_version() != version or time.monotonic() >= end:
                return
            step = min(step * 2, _IDLE_STEP_MAX_S)

    def _idle_wait(self, store: Store) -> None:
        """Sleep until another connection commits, with back-off, at most idle_poll_max_ms."""
        self._wait_for_commit(store, self.idle_poll_max_ms / 1000)

    # -- heartbeat thread ------------------------------------------------------
    def _heartbeat(self, every_s: float) -> None:
        try:
            with self._open_store() as store:
                q = store.queue(self.queue)
                next_sweep = time.monotonic() + _SWEEP_EVERY_S
                while not self._finished.wait(every_s):
                    if time.monotonic() >= next_sweep:
                        swept = self._retry(q.sweep_expired)
                        if swept:
                            log.info("swept %d jobs past their TTL", swept)
                        next_sweep = time.monotonic() + _SWEEP_EVERY_S
                    jobs = [job for job, _ in self._inflight.snapshot()]
                    if not jobs:
                        continue
                    result = self._retry(partial(q.extend, jobs, lease_ms=self.lease_ms))
                    if result.rejected:
                        log.warning("heartbeat: leases of jobs %s were lost", result.rejected)
        except Exception as exc:
            self._crashed("the heartbeat thread", exc)

    # -- helpers -------------------------------------------------------------
    def _open_store(self) -> Store:
        return Store(self.path, durability=self._durability, busy_timeout_ms=self._busy_timeout_ms)

    def _retry(self, operation: Callable[[], T]) -> T:
        """Run ``operation``, retrying with back-off while the store is busy or locked."""
        step = 0.01
        while True:
            try:
                return operation()
            except StoreBusyError:
                log.warning("store busy; retrying in %.0f ms", step * 1000)
                time.sleep(step)
                step = min(step * 2, _BUSY_STEP_MAX_S)

    def _failed(self, job: Job, exc: BaseException, result: Any) -> None:
        """Count a handler failure and say on one line what happened to the job."""
        if result.dead:
            outcome = "dead-lettered"
        elif result.retried:
            # The store's clock (epoch ms), as NackResult.retry_at_ms is.
            now = time.time_ns() // 1_000_000
            wait_ms = max(0, result.retry_at_ms[0] - now) if result.retry_at_ms else 0
            outcome = f"retry in {_duration(wait_ms)}"
        else:
            outcome = "its lease was lost before the nack: it will run again"
        log.warning(
            "job %d of queue %r failed (attempt %d): %s; %s",
            job.id, self.queue, job.attempts, _last_line(exc), outcome,
        )
        with self._stats_lock:
            self.stats.failed += 1
            self.stats.lost_leases += len(result.rejected)
            self.stats.dead_lettered += len(result.dead)
            for job_id in result.retried:
                if job_id not in self._retried_ids:
                    self._retried_ids.add(job_id)
                    self.stats.retried += 1

    def _count(
        self,
        *,
        acked: int = 0,
        failed: int = 0,
        released: int = 0,
        lost: int = 0,
        held: int = 0,
    ) -> None:
        with self._stats_lock:
            self.stats.held += held
            self.stats.acked += acked
            self.stats.failed += failed
            self.stats.released += released
            self.stats.lost_leases += lost

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            self._wake_w.send(b"\0")


def _last_line(exc: BaseException) -> str:
    """``TypeError: string indices must be integers``: what a traceback ends with."""
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def _duration(ms: int) -> str:
    if ms < 1000:
        return f"{ms} ms"
    if ms < 120_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms / 60_000:.1f} min"


def load_handler(spec: str) -> Handler:
    """Import ``module:function`` (the current directory is importable, like ``python -m``)."""
    import importlib
    import sys

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise QueueConfigError(
            f"handler must look like 'module:function' (e.g. 'tasks:send_email'); got {spec!r}."
        )
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise QueueConfigError(f"cannot import handler module {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise QueueConfigError(
                f"handler module {module_name!r} has no attribute {attr!r}."
            ) from exc
    if not callable(target):
        raise QueueConfigError(f"handler {spec!r} is not callable.")
    return target
