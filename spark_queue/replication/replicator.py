"""The replicator: Litestream shipping the store, and the replicated high-water mark.

:func:`replicate` (``sqliteq replicate STORE --to URL``) runs until ``stop`` is set:

- it takes the store's replicator lease, refusing to start beside another replicator
  (:mod:`spark_queue.store.file.replicator_lease`: a lock the kernel drops when the holder
  dies, and the holder's record in the store);
- it starts ``litestream replicate`` for the store (its own sync every
  ``sync_interval_ms``, its control socket in a private temp directory);
- it marks the store replicated (readers are capped at the mark from then on), and only
  then reports ready (``ready``; :func:`start_replication` returns then), so every
  connection opened afterwards leaves the WAL's checkpoints to Litestream;
- it runs cycles (:class:`spark_queue.store.ReplicaCycles`): begin (one write
  transaction snapshots every topic's end), ``litestream sync -wait`` (the replica holds
  that commit), finish (the snapshot becomes the mark). A cycle runs at once when a
  ``durability="replicated"`` writer is waiting (it touches the store's wake file), and
  otherwise every ``sync_interval_ms`` while the store changes, so an idle store costs
  no requests and a busy one a cycle per interval;
- on stop, one last cycle, then Litestream stops (it ships what is left). A replicator
  that stops on an error records when and why in the store (``sqliteq check``, ``topics``
  and ``tail`` say so) before it drops its lease.

Litestream and the store's housekeeping share the WAL without fighting: the store only
ever runs PASSIVE checkpoints (they never wait for, nor pass, a reader), and
Litestream holds a read transaction on the WAL it has not shipped yet, so no frame is
checkpointed away before Litestream has copied it (BENCHMARKS.md, "replication").
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from spark_queue import defaults
from spark_queue.errors import ReplicationError
from spark_queue.replication import litestream
from spark_queue.store import ReplicaCycles, ReplicaStatus
from spark_queue.times import format_time_ms

log = logging.getLogger("spark_queue.replication")

# How often the loop looks at the wake file and Litestream's health.
_POLL_S = 0.002
#: How long one ``sync -wait`` may take before the replicator gives up (and exits).
SYNC_TIMEOUT_S = 60.0


class Replicator:
    """One store, one replica, one Litestream daemon (see the module)."""

    def __init__(
        self,
        store: str | os.PathLike[str],
        to: str,
        *,
        sync_interval_ms: int = defaults.REPLICA_SYNC_INTERVAL_MS,
        litestream_path: str | None = None,
    ) -> None:
        if sync_interval_ms < 1:
            raise ReplicationError(f"sync_interval_ms must be at least 1; got {sync_interval_ms}.")
        self.store = os.path.abspath(os.fspath(store))
        self.target = litestream.parse_target(to)
        self.sync_interval_ms = sync_interval_ms
        self.exe = litestream.binary(litestream_path)
        self.env = litestream.environment(self.target)
        self.cycles_done = 0
        #: How long a sync meeting a busy store is retried (litestream.BUSY_RETRY_S).
        self.busy_retry_s = litestream.BUSY_RETRY_S
        #: The replica's status when the replicator stopped (for :meth:`summary`).
        self.final_status: ReplicaStatus | None = None

    def run(self, stop: threading.Event, ready: Callable[[], None] | None = None) -> None:
        """Replicate until ``stop`` is set; ReplicationError if Litestream fails, and
        ReplicatorRunningError if another replicator runs. ``ready`` is called once the
        store is marked replicated."""
        cycles = ReplicaCycles(self.store)  # creates the store when missing
        try:
            cycles.take_lease()
            try:
                self._run(cycles, stop, ready)
            except Exception as exc:
                cycles.gave_up(str(exc))
                raise
            finally:
                self._note_final_status(cycles)
        finally:
            cycles.close()

    def _note_final_status(self, cycles: ReplicaCycles) -> None:
        try:
            status = cycles.status()
        except Exception:  # the store itself may be what failed: the summary goes without
            return
        self.final_status = status

    def summary(self) -> str:
        """What this replicator did, for its last words (``sqliteq replicate``)."""
        said = (f"stopped replicating {self.store} to {self.target.url}: {self.cycles_done} "
                "cycles confirmed by the replica")
        status = self.final_status
        if status is None:
            return said
        if status.synced_ms is not None:
            said += f", the last at {format_time_ms(status.synced_ms)}"
        waiting = {topic: n for topic, n in status.behind.items() if n}
        if not waiting:
            return said + "; the replica holds every event"
        listed = ", ".join(f"{n} of {topic!r}" for topic, n in sorted(waiting.items()))
        return (said + f"; not in the replica: {listed} (readers see them once a replicator "
                "runs again)")

    def _run(self, cycles: ReplicaCycles, stop: threading.Event,
             ready: Callable[[], None] | None) -> None:
        with litestream.private_dir() as work:
            socket_path = os.path.join(work, "ls.sock")
            config = litestream.write_config(
                work, self.store, self.target, sync_interval_ms=None,
                socket_path=socket_path,
            )
            # The lease's lock goes with Litestream: it outlives a SIGKILLed replicator
            # for as long as it ships (replicator_lease), and nobody starts beside it.
            # A session of its own: Ctrl-C (SIGINT to the terminal's process group) reaches
            # the replicator alone, which runs its last cycle before it stops Litestream.
            lock = cycles.lease_fd
            process = subprocess.Popen(
                [self.exe, "replicate", "-config", config], env=self.env,
                stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent,
                pass_fds=() if lock is None else (lock,), start_new_session=True,
            )
            try:
                litestream.wait_for_socket(socket_path, process, timeout_s=30)
                cycles.mark(self.target.url)
                if ready is not None:
                    ready()
                log.info("replicating %s to %s", self.store, self.target.url)
                self._loop(cycles, process, socket_path, stop)
                self._cycle(cycles, socket_path)  # the last one: a clean stop loses nothing
            finally:
                _stop(process)

    def _loop(self, cycles: ReplicaCycles, process: subprocess.Popen[bytes],
              socket_path: str, stop: threading.Event) -> None:
        wake_seen = _mtime(cycles.wake_path)
        version = cycles.changed()
        self._cycle(cycles, socket_path)
        due = time.monotonic() + self.sync_interval_ms / 1000
        while not stop.wait(_POLL_S):
            if process.poll() is not None:
                raise ReplicationError(
                    f"litestream replicate exited (exit {process.returncode}) while "
                    f"replicating {self.store}; its message is above."
                )
            wake = _mtime(cycles.wake_path)
            if wake != wake_seen:
                wake_seen = wake
            elif time.monotonic() < due:
                continue
            else:
                now_version = cycles.changed()
                if now_version == version:
                    due = time.monotonic() + self.sync_interval_ms / 1000
                    continue
            # Taken before the cycle begins: a commit after it runs the next cycle.
            version = cycles.changed()
            self._cycle(cycles, socket_path)
            due = time.monotonic() + self.sync_interval_ms / 1000

    def _cycle(self, cycles: ReplicaCycles, socket_path: str) -> None:
        cycle, ends = cycles.begin()
        litestream.sync_wait(self.exe, socket_path, self.store, self.env, SYNC_TIMEOUT_S,
                             busy_retry_s=self.busy_retry_s)
        cycles.finish(cycle, ends)
        self.cycles_done += 1


def _die_with_parent() -> None:
    """In the child before exec: Linux sends it SIGTERM when the replicator dies (even by
    SIGKILL), so no Litestream outlives its replicator and ships a store nobody marks."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()  # Litestream ships what is left on SIGTERM
        try:
            process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def replicate(
    store: str | os.PathLike[str],
    to: str,
    *,
    stop: threading.Event | None = None,
    sync_interval_ms: int = defaults.REPLICA_SYNC_INTERVAL_MS,
    litestream_path: str | None = None,
) -> None:
    """Replicate ``store`` to ``to`` (``file:///dir`` or ``s3://bucket/prefix``) until
    ``stop`` is set (forever when None): Python's ``sqliteq replicate``."""
    Replicator(store, to, sync_interval_ms=sync_interval_ms,
               litestream_path=litestream_path).run(stop or threading.Event())


class Replicating:
    """A replicator running in a daemon thread of this process (the notebooks' and the
    demo's start step), returned once the store is marked replicated (so a ``Store``,
    ``Producer`` or ``Worker`` opened on the next line leaves the WAL to Litestream);
    ReplicationError at once if it cannot start (ReplicatorRunningError: another
    replicator runs). :meth:`stop` runs its last cycle and waits for it; so does the
    interpreter's exit."""

    def __init__(self, store: str | os.PathLike[str], to: str, *,
                 sync_interval_ms: int = defaults.REPLICA_SYNC_INTERVAL_MS,
                 litestream_path: str | None = None) -> None:
        self._stop = threading.Event()
        self._replicator = Replicator(store, to, sync_interval_ms=sync_interval_ms,
                                      litestream_path=litestream_path)
        self.url = self._replicator.target.url
        self.error: BaseException | None = None
        #: whether start_replication restored the store from the replica first
        self.restored = False
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,),
                                        name="sqliteq-replicate", daemon=True)
        self._thread.start()
        # Ready, or the thread ended: Litestream's start is bounded (wait_for_socket).
        while not ready.wait(0.01) and self._thread.is_alive():
            pass
        if not ready.is_set():
            self._thread.join()
            error, self.error = self.error, None
            if isinstance(error, ReplicationError):
                raise error  # as it is: ReplicatorRunningError names the other replicator
            raise ReplicationError(f"replication did not start: {error}") from error
        atexit.register(self.stop)

    def _run(self, ready: threading.Event) -> None:
        try:
            self._replicator.run(self._stop, ready.set)
        except BaseException as exc:  # kept for stop() and the log: a thread cannot raise
            self.error = exc
            log.error("replication of %s stopped: %s", self._replicator.store, exc)

    @property
    def running(self) -> bool:
        """Whether its thread still replicates (not stopped, not failed)."""
        return self._thread.is_alive() and not self._stop.is_set()

    def stop(self) -> None:
        """Stop after a last cycle (a no-op when stopped); ReplicationError if it had failed."""
        self._stop.set()
        self._thread.join()
        if self.error is not None:
            error, self.error = self.error, None
            raise ReplicationError(f"replication failed: {error}") from error

    def summary(self) -> str:
        """What the replicator did (once stopped: its cycles, what the replica holds)."""
        return self._replicator.summary()


def start_replication(
    store: str | os.PathLike[str], url: str, *,
    sync_interval_ms: int = defaults.REPLICA_SYNC_INTERVAL_MS,
) -> Replicating:
    """The start step of a machine that may vanish: restore ``store`` from ``url`` if it is
    missing (nothing when the replica is empty too), then replicate it in the background
    until :meth:`Replicating.stop` or the end of the process. Returns once the store is
    marked replicated; ReplicatorRunningError when another replicator runs on it. Its
    ``restored`` says whether the store came back from the replica."""
    from spark_queue.replication.restoring import restore

    restored = restore(store, url, if_missing=True)
    replicating = Replicating(store, url, sync_interval_ms=sync_interval_ms)
    replicating.restored = restored
    return replicating
