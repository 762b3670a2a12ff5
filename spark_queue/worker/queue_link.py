"""The worker's calls on its queue, each retried while the store is busy or locked.

A worker never gives up on a busy store: every call below backs off and tries
again (a store error of any other kind goes to the caller). One ``QueueLink``
per thread, since a connection never crosses threads; it closes its store.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TypeVar

from spark_queue.errors import StoreBusyError
from spark_queue.store import (
    Admission,
    Job,
    LeaseResult,
    NackResult,
    QueueConfig,
    QueueStats,
    Store,
)
from spark_queue.times import format_duration_ms

log = logging.getLogger("spark_queue.worker")

T = TypeVar("T")

_BUSY_STEP_MAX_S = 1.0


def retried(operation: Callable[[], T]) -> T:
    """Run ``operation``, retrying with back-off while the store is busy or locked."""
    step = 0.01
    while True:
        try:
            return operation()
        except StoreBusyError:
            log.warning("store busy; retrying in %s", format_duration_ms(round(step * 1000)))
            time.sleep(step)
            step = min(step * 2, _BUSY_STEP_MAX_S)


class QueueLink:
    """One store connection's view of the worker's queue: claims and leases at the
    worker's ``visibility_timeout_ms`` (None: the queue's own), registrations, waits."""

    def __init__(self, store: Store, queue: str, visibility_timeout_ms: int | None) -> None:
        self.store = store
        self.name = queue
        self.queue = store.queue(queue)
        self.visibility_timeout_ms = visibility_timeout_ms

    def __enter__(self) -> QueueLink:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.store.close()

    # -- starting and stopping --------------------------------------------------
    def create(self) -> QueueConfig:
        """The queue's settings, creating it with the defaults if missing."""
        return retried(self.queue.configure)

    def exists(self) -> bool:
        return retried(self.queue.exists)

    def queue_names(self) -> list[str]:
        """Every queue of the store, for an error that names the choices."""
        return [config.name for config in retried(self.store.queues)]

    def config(self) -> QueueConfig:
        return retried(self.queue.config)

    def sweep_expired(self) -> int:
        return retried(self.queue.sweep_expired)

    def register(self, *, concurrency: int, ttl_ms: int) -> int:
        """This process's worker row (host, pid); its id."""
        return retried(lambda: self.queue.register_worker(
            host=socket.gethostname(), pid=os.getpid(), concurrency=concurrency, ttl_ms=ttl_ms))

    def unregister(self, worker_id: int) -> None:
        retried(lambda: self.queue.unregister_worker(worker_id))

    def heartbeat(self, worker_id: int, *, jobs_held: int, ttl_ms: int) -> bool:
        return retried(lambda: self.queue.worker_heartbeat(
            worker_id, jobs_held=jobs_held, ttl_ms=ttl_ms))

    # -- jobs ---------------------------------------------------------------------
    def claim(self, limit: int) -> list[Job]:
        return retried(lambda: self.queue.claim(
            limit, visibility_timeout_ms=self.visibility_timeout_ms))

    def ack(self, jobs: list[Job]) -> LeaseResult:
        return retried(lambda: self.queue.ack_many(jobs))

    def ack_and_claim(self, jobs: list[Job], limit: int) -> tuple[LeaseResult, list[Job]]:
        """Ack ``jobs`` and claim up to ``limit`` more in one transaction (one commit, not two)."""
        return retried(lambda: self.queue.ack_and_claim(
            jobs, limit, visibility_timeout_ms=self.visibility_timeout_ms))

    def release(self, jobs: list[Job], *, count_attempt: bool) -> LeaseResult:
        return retried(lambda: self.queue.release(jobs, count_attempt=count_attempt))

    def nack(self, jobs: list[Job], error: str, *, delay_ms: int | None) -> NackResult:
        return retried(lambda: self.queue.nack_many(jobs, error, delay_ms=delay_ms))

    def extend(self, jobs: list[Job]) -> LeaseResult:
        return retried(lambda: self.queue.extend(
            jobs, visibility_timeout_ms=self.visibility_timeout_ms))

    # -- waiting ------------------------------------------------------------------
    def admission(self) -> Admission:
        return retried(self.queue.admission)

    def stats(self) -> QueueStats:
        return retried(self.queue.stats)

    def wait_for_commit(self, timeout_ms: int, stop: threading.Event) -> bool:
        """Until another connection commits, ``timeout_ms`` passes or ``stop`` is set."""
        return self.store.wait_for_commit(timeout_ms, stop=stop)
