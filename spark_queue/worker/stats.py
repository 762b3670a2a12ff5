"""What a worker did, counted from many threads: :class:`WorkerStats` behind a lock."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from spark_queue.store import NackResult


@dataclass
class WorkerStats:
    """What one :meth:`~spark_queue.worker.Worker.run` did."""

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
    # Jobs whose handler was still running when the worker stopped (the grace period
    # ended, or a crash): nacked with an error saying so.
    interrupted: int = 0

    def as_dict(self) -> dict[str, int]:
        """The exit summary: jobs acked, retried and dead-lettered, then the rest."""
        return {
            "acked": self.acked,
            "retried": self.retried,
            "dead_lettered": self.dead_lettered,
            "interrupted": self.interrupted,
            "released": self.released,
            "lost_leases": self.lost_leases,
            "held": self.held,
        }


class Tally:
    """The one writer of a run's :class:`WorkerStats`, safe to call from any thread."""

    def __init__(self) -> None:
        self.stats = WorkerStats()
        self._lock = threading.Lock()
        self._retried_ids: set[int] = set()

    def count(
        self, *, acked: int = 0, released: int = 0, lost: int = 0, held: int = 0
    ) -> None:
        with self._lock:
            self.stats.held += held
            self.stats.acked += acked
            self.stats.released += released
            self.stats.lost_leases += lost

    def nacked(self, result: NackResult, *, failed: int = 1, interrupted: int = 0) -> None:
        """Count a nack: ``failed`` handler attempts, jobs retried (once each) or dead."""
        with self._lock:
            self.stats.failed += failed
            self.stats.interrupted += interrupted
            self.stats.lost_leases += len(result.rejected)
            self.stats.dead_lettered += len(result.dead)
            for job_id in result.retried:
                if job_id not in self._retried_ids:
                    self._retried_ids.add(job_id)
                    self.stats.retried += 1
