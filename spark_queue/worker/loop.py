"""The worker's lifecycle: start on a queue, run the slot threads (their work is
:mod:`spark_queue.worker.slot`'s) and the heartbeat, let the main thread supervise them
(:mod:`spark_queue.worker.supervisor`), then give back what is held and report (see
:mod:`spark_queue.worker`)."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable

from spark_queue import defaults
from spark_queue.defaults import MAX_WAIT_MS
from spark_queue.errors import ReadOnlyStoreError, UnknownQueueError, WorkerCrashedError
from spark_queue.store import Housekeeper, QueueConfig, QueueStats, Store
from spark_queue.times import format_duration_ms
from spark_queue.worker.inflight import InFlight
from spark_queue.worker.queue_link import QueueLink
from spark_queue.worker.settings import check_settings, deprecated_lease_ms
from spark_queue.worker.slot import Slot
from spark_queue.worker.stats import Tally, WorkerStats
from spark_queue.worker.supervisor import Supervisor
from spark_queue.worker.task import Handler, held_at_stop, one_line

log = logging.getLogger("spark_queue.worker")

# A worker is listed alive for 3 heartbeat intervals after its last one, at least this.
_MIN_ALIVE_MS = 1_000


class Worker:
    """A consumer loop over one queue of one store file (see :mod:`spark_queue.worker`)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        queue: str,
        handler: Handler,
        *,
        concurrency: int = 1,
        batch_size: int = 1,
        visibility_timeout_ms: int | None = None,
        heartbeat_ms: int | None = None,
        grace_ms: int = defaults.WORKER_GRACE_MS,
        idle_poll_max_ms: int = 500,
        until_empty: bool = False,
        on_wait: Callable[[QueueStats], None] | None = None,
        durability: str = defaults.DURABILITY,
        busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS,
        create_queue: bool = False,
        lease_ms: int | None = None,
    ) -> None:
        lease = deprecated_lease_ms(visibility_timeout_ms, lease_ms)
        check_settings(
            concurrency=concurrency, batch_size=batch_size, grace_ms=grace_ms,
            idle_poll_max_ms=idle_poll_max_ms, heartbeat_ms=heartbeat_ms,
            # Named as the caller named it, the deprecated name included.
            **{"visibility_timeout_ms" if lease_ms is None else "lease_ms": lease},
        )
        self.path = os.fspath(path)
        self.queue = queue
        self.handler = handler
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.visibility_timeout_ms = lease
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
        self._tally = Tally()
        self.stats = self._tally.stats
        self._supervisor = Supervisor()
        self._finished = threading.Event()
        self._inflight = InFlight()
        self._worker_id = 0
        self._alive_ms = _MIN_ALIVE_MS

    # -- public --------------------------------------------------------------
    def stop(self) -> None:
        """Ask the worker to stop (thread-safe): stop claiming, finish within the grace period."""
        self._supervisor.stop()

    def run(self) -> WorkerStats:
        """Run until stopped (signal or :meth:`stop`) or, with ``until_empty``, the queue is empty.

        Installs SIGTERM/SIGINT handlers when called from the main thread and
        restores the previous ones on return. Refuses to start, before any
        thread runs, on a store it cannot write (:class:`ReadOnlyStoreError`) or
        an unknown queue (:class:`UnknownQueueError` listing the store's
        queues, unless ``create_queue``). If a slot or the heartbeat thread
        crashes, the worker stops as for a signal, gives back every lease it
        holds and raises :class:`WorkerCrashedError` (its ``stats`` say what was
        done). ``stats.interrupted`` counts handlers still running at the end.
        """
        config = self._open_queue()
        lease_ms = self.visibility_timeout_ms or config.visibility_timeout_ms
        heartbeat_ms = min(self.heartbeat_ms or max(1, lease_ms // 3), MAX_WAIT_MS)
        # Listed alive while heartbeats come; a few may be late on a busy store.
        self._alive_ms = max(3 * heartbeat_ms, _MIN_ALIVE_MS)
        self._register()
        try:
            return self._run(lease_ms, heartbeat_ms)
        finally:
            self._unregister()

    def _run(self, lease_ms: int, heartbeat_ms: int) -> WorkerStats:
        work = self._slot_work()
        supervisor = self._supervisor
        with supervisor.signals_installed():
            slots = [
                threading.Thread(target=self._slot, args=(work, i), name=f"sq-worker-{i}",
                                 daemon=True)
                for i in range(self.concurrency)
            ]
            beat = threading.Thread(
                target=self._heartbeat, args=(heartbeat_ms / 1000,), name="sq-heartbeat",
                daemon=True,
            )
            # Before the first slot starts: a job's own log lines come after this one.
            log.info(
                "worker on queue %r: %d slots, lease %s, heartbeat every %s",
                self.queue, len(slots), format_duration_ms(lease_ms),
                format_duration_ms(heartbeat_ms),
            )
            for thread in slots:
                thread.start()
            beat.start()
            # Retention, dead letters, TTL sweep and the WAL, off the slots' path.
            keeper = Housekeeper(self.path, busy_timeout_ms=self._busy_timeout_ms).start()
            clean = supervisor.supervise(len(slots), self.grace_ms)
            keeper.stop()
            given_back: int | None = 0
            self._finished.set()
            if clean:
                beat.join()
            # After a crash the dead slot's jobs are still held: give them back too.
            if not clean or supervisor.crash is not None:
                given_back = self._give_back_after(work)
        if supervisor.crash is not None:
            where, exc = supervisor.crash
            said = (
                f"{given_back} leased jobs were released (back to ready), the others finished "
                "first" if given_back is not None else
                "its leases could not be released and will expire"
            )
            raise WorkerCrashedError(
                f"worker on queue {self.queue!r} stopped: {where} crashed with "
                f"{one_line(exc)}; {said}. Rerun with -v for the traceback.",
                self.stats,
            ) from exc
        return self.stats

    def _open_queue(self) -> QueueConfig:
        """The queue's settings, after checking that the worker can run on it at all."""
        with self._open_link() as link:
            try:
                if self.create_queue:
                    # Creates the queue with the defaults if missing, so stats and metrics
                    # show it.
                    return link.create()
                if not link.exists():
                    names = link.queue_names()
                    known = f"its queues are {', '.join(map(repr, names))}" if names else (
                        "it has no queues yet")
                    raise UnknownQueueError(
                        f"queue {self.queue!r} does not exist in {self.path!r} ({known}); check "
                        "the name, or let the worker create it (`sqliteq worker --create`, "
                        "Worker(create_queue=True))."
                    )
                config = link.config()
                # A write that proves the store writable before any job is claimed.
                link.sweep_expired()
                return config
            except ReadOnlyStoreError as exc:
                raise ReadOnlyStoreError(
                    f"worker on queue {self.queue!r} cannot start: store {self.path!r} cannot "
                    "be written (a read-only file, directory or mount, or no write permission) "
                    "and a worker writes every claim, ack and heartbeat. Run it where the store "
                    "is writable."
                ) from exc

    def _register(self) -> None:
        """Show this worker in ``sqliteq queue workers`` (its row lives while it beats)."""
        with self._open_link() as link:
            self._worker_id = link.register(concurrency=self.concurrency, ttl_ms=self._alive_ms)

    def _unregister(self) -> None:
        """Remove this worker's row; a store that fails here is said, not raised (the row
        then shows the worker as lost once its heartbeat expires)."""
        try:
            with self._open_link() as link:
                link.unregister(self._worker_id)
        except Exception as exc:
            log.error("could not unregister the worker: %s", one_line(exc))

    def _give_back_after(self, work: Slot) -> int | None:
        """Give back what is still held; after a crash a store that fails again is said, not
        raised (the crash is the error to report). None if that failed."""
        try:
            return self._give_back_leftovers(work)
        except Exception as exc:
            if self._supervisor.crash is None:
                raise
            log.error("could not give the leases back at shutdown: %s", one_line(exc))
            return None

    def _give_back_leftovers(self, work: Slot) -> int:
        """Carry out :func:`~spark_queue.worker.task.held_at_stop` for every lease still
        held; the number given back."""
        held = self._inflight.take_all()
        running = held["running"]
        total = sum(map(len, held.values()))
        if not total:
            return 0
        given_back = 0
        with self._open_link() as link:
            for phase in ("claimed", "finished", "running"):
                if held[phase]:
                    action = held_at_stop(phase, self._interrupted_error())
                    given_back += work.carry_out(link, held[phase], action)
        log.warning("gave back %d leases at shutdown (%d were running)", total, len(running))
        return given_back

    def _interrupted_error(self) -> str:
        crash = self._supervisor.crash
        why = (
            f"{crash[0]} crashed with {one_line(crash[1])}"
            if crash is not None else
            f"the grace period of {format_duration_ms(self.grace_ms)} ended"
        )
        return (
            f"the handler was still running when the worker stopped ({why}; worker pid "
            f"{os.getpid()} on {socket.gethostname()})"
        )

    # -- slot threads ----------------------------------------------------------
    def _slot_work(self) -> Slot:
        """What each slot thread runs, from the worker's settings as they are at run()."""
        return Slot(
            queue=self.queue, handler=self.handler, batch_size=self.batch_size,
            idle_poll_max_ms=self.idle_poll_max_ms, until_empty=self.until_empty,
            on_wait=self.on_wait, stopping=self._supervisor.stopping, inflight=self._inflight,
            tally=self._tally,
        )

    def _slot(self, work: Slot, index: int) -> None:
        try:
            with self._open_link() as link:
                work.run(link)
        except BaseException as exc:  # noqa: BLE001 - a thread that dies must stop the worker
            self._supervisor.record_crash(f"worker slot {index}", exc)
            self.stop()
        finally:
            self._supervisor.slot_ended()

    # -- heartbeat thread ------------------------------------------------------
    def _heartbeat(self, every_s: float) -> None:
        try:
            with self._open_link() as link:
                while not self._finished.wait(every_s):
                    jobs = self._inflight.jobs()
                    link.heartbeat(self._worker_id, jobs_held=len(jobs), ttl_ms=self._alive_ms)
                    if not jobs:
                        continue
                    result = link.extend(jobs)
                    if result.rejected:
                        log.warning("heartbeat: leases of jobs %s were lost", result.rejected)
        except BaseException as exc:  # noqa: BLE001 - a thread that dies must stop the worker
            self._supervisor.record_crash("the heartbeat thread", exc)
            self.stop()

    # -- helpers -------------------------------------------------------------
    def _open_store(self) -> Store:
        return Store(self.path, durability=self._durability, busy_timeout_ms=self._busy_timeout_ms)

    def _open_link(self) -> QueueLink:
        """A connection of this thread's own to the queue (closed on leaving ``with``)."""
        return QueueLink(self._open_store(), self.queue, self.visibility_timeout_ms)

