"""The jobs a worker holds: claimed and not yet acked or nacked, for heartbeats and shutdown."""

from __future__ import annotations

import threading
from typing import Literal

from spark_queue.store import Job

# claimed: not started yet; running: in its handler; finished: its handler returned, the
# ack (with the rest of the batch) not written yet.
Phase = Literal["claimed", "running", "finished"]


class InFlight:
    """Claimed, unsettled jobs of this worker and the phase each is in; locked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[int, tuple[Job, Phase]] = {}

    def add(self, jobs: list[Job]) -> None:
        with self._lock:
            for job in jobs:
                self._jobs[job.id] = (job, "claimed")

    def mark(self, job: Job, phase: Phase) -> None:
        with self._lock:
            if job.id in self._jobs:
                self._jobs[job.id] = (job, phase)

    def discard(self, jobs: list[Job]) -> None:
        with self._lock:
            for job in jobs:
                self._jobs.pop(job.id, None)

    def jobs(self) -> list[Job]:
        with self._lock:
            return [job for job, _ in self._jobs.values()]

    def take_all(self) -> dict[Phase, list[Job]]:
        """Every job held, by phase, and forget them (shutdown gives them back)."""
        with self._lock:
            taken: dict[Phase, list[Job]] = {"claimed": [], "running": [], "finished": []}
            for job, phase in self._jobs.values():
                taken[phase].append(job)
            self._jobs.clear()
            return taken
