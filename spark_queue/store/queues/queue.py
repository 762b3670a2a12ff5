"""The :class:`Queue` handle: one named queue of one :class:`~spark_queue.store.Store`.

Each method runs in one transaction of the store's connection and says what it
guarantees. Like the Store, a handle belongs to one thread.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable
from typing import Any, Unpack

from spark_queue.defaults import MAX_STORED
from spark_queue.errors import (
    QueueBatchTooLargeError,
    QueueConfigError,
    QueueFullError,
    StaleLeaseError,
)
from spark_queue.job_options import JobOptions
from spark_queue.store.file.arguments import check_int, check_optional_int
from spark_queue.store.file.connection import HasStoreConnection, now_ms, translated
from spark_queue.store.file.names import validate_name
from spark_queue.store.queues import (
    claims,
    controls,
    leases,
    queue_admin,
    queue_jobs,
    queue_workers,
)
from spark_queue.store.queues.controls import Admission
from spark_queue.store.queues.queue_admin import JobInfo, QueueStats
from spark_queue.store.queues.queue_config import QueueConfig, QueueSettings
from spark_queue.store.queues.queue_jobs import Job, Lease, LeaseResult, NackResult, NewJob
from spark_queue.store.queues.queue_workers import WorkerInfo

# How long a full queue's enqueue sleeps between looks, at most (it starts at 1 ms).
_MAX_WAIT_STEP_MS = 50

@translated
class Queue:
    """A work queue in a store file: at-least-once jobs with leases, retries and dead letters.

    >>> q = store.queue("emails")                        # doctest: +SKIP
    >>> q.enqueue({"to": "a@example.com"}, priority=5)
    >>> for job in q.claim(32): ...; q.ack(job)
    """

    def __init__(self, store: HasStoreConnection, name: str) -> None:
        self.file = store.file
        self.name = validate_name(name, "queue")

    def __repr__(self) -> str:
        return f"Queue({self.file.path!r}, {self.name!r})"

    # -- settings ----------------------------------------------------------
    def configure(self, **settings: Unpack[QueueSettings]) -> QueueConfig:
        """Create the queue if missing and change the given settings (one transaction)."""
        with self.file.write() as conn:
            return queue_admin.configure(conn, self.name, settings)

    def pause(self) -> QueueConfig:
        """Stop claims (one transaction): from its commit on, claims return nothing.

        Enqueues still land; jobs already leased can be acked, nacked and extended.
        """
        return self.configure(paused=True)

    def resume(self) -> QueueConfig:
        """Let claims take jobs again (one transaction)."""
        return self.configure(paused=False)

    def admission(self) -> Admission:
        """How many jobs a claim may take now and what holds it back (one read snapshot).

        What a claim would decide, without claiming: a worker uses it to wait
        (paused, at ``max_leased``, or out of rate-limit tokens) without taking
        the write lock.
        """
        with self.file.read():
            config = queue_jobs.get_queue(self.file.conn, self.name)
            if config is None:  # like a claim: an unknown queue has no jobs, and no controls
                return controls.OPEN
            return controls.admission(self.file.conn, config, self.file.now_ms())

    def config(self) -> QueueConfig:
        """The queue's settings; UnknownQueueError if it was never created."""
        with self.file.read():
            return queue_admin.require_queue(self.file.conn, self.name)

    def exists(self) -> bool:
        with self.file.read():
            return queue_jobs.get_queue(self.file.conn, self.name) is not None

    # -- enqueue -----------------------------------------------------------
    def enqueue(
        self,
        payload: Any,
        *,
        wait_ms: int | None = 0,
        **options: Unpack[JobOptions],
    ) -> int:
        """Enqueue one job in its own transaction; returns its id (durable on return).
        Creates the queue with the defaults if it does not exist (check :meth:`exists` first
        when the name comes from a user: a typo would make a new queue).

        ``options``: ``priority`` (0), ``delay_ms`` (0), ``ttl_ms``, ``idempotency_key``,
        ``max_attempts`` (:class:`~spark_queue.job_options.JobOptions`). See
        :meth:`enqueue_many` for ``wait_ms`` and idempotency.
        """
        job = NewJob(payload, **options)
        return self.enqueue_many([job], wait_ms=wait_ms)[0]

    def enqueue_many(self, jobs: Iterable[NewJob | Any], *, wait_ms: int | None = 0) -> list[int]:
        """Enqueue :class:`NewJob` items (or bare payloads) in ONE transaction; returns their ids.

        All jobs become visible together or none does. A duplicate
        ``idempotency_key`` (against the queue or earlier in the batch)
        returns the original job's id and inserts nothing. When the queue has
        a ``max_size`` and the batch does not fit, wait up to ``wait_ms`` for
        workers to make room (``None``: wait as long as it takes; ``0``: fail
        at once) and then raise :class:`QueueFullError`; a batch larger than
        ``max_size`` raises :class:`QueueBatchTooLargeError` at once.
        """
        check_optional_int(wait_ms, "wait_ms", error=QueueConfigError,
                           none_means="wait as long as it takes")
        batch = list(jobs)
        deadline_s = None if wait_ms is None else time.monotonic() + wait_ms / 1000
        step_ms = 1
        while True:
            try:
                with self.file.write() as conn:
                    return queue_jobs.enqueue_rows(conn, self.name, batch)
            except QueueBatchTooLargeError:
                raise
            except QueueFullError:
                remaining_ms = (None if deadline_s is None
                                else (deadline_s - time.monotonic()) * 1000)
                if remaining_ms is not None and remaining_ms <= 0:
                    raise
            # Sleep with back-off, but look again as soon as the file changed.
            self.file.wait_for_commit(step_ms if remaining_ms is None
                                      else min(step_ms, remaining_ms))
            step_ms = min(step_ms * 2, _MAX_WAIT_STEP_MS)

    # -- leases ------------------------------------------------------------
    def claim(
        self, limit: int = 1, *, visibility_timeout_ms: int | None = None,
        lease_ms: int | None = None,
    ) -> list[Job]:
        """Lease up to ``limit`` due jobs in one transaction (one ``UPDATE ... RETURNING``)
        for ``visibility_timeout_ms`` (default: the queue's; ``lease_ms`` is its deprecated
        name).

        At-least-once: a job comes back to another claim if this lease expires
        before ack, nack or extend. Order is ``priority DESC, available_at, id``.
        A paused queue returns nothing; ``max_leased`` and the rate limit may
        cut the batch short (:meth:`admission` says why).
        """
        lease = _visibility_timeout("claim", visibility_timeout_ms, lease_ms)
        with self.file.write() as conn:
            return claims.claim(conn, self.name, limit, lease_ms=lease)

    def ack(self, job: Lease) -> None:
        """Mark one leased job done (deleted), one transaction; StaleLeaseError if lost."""
        result = self.ack_many([job])
        if result.rejected:
            raise StaleLeaseError(self._stale_message("ack", result.rejected))

    def ack_many(self, jobs: Iterable[Lease]) -> LeaseResult:
        """Ack many leases in ONE transaction; stale ones are listed in ``rejected``, unchanged."""
        with self.file.write() as conn:
            return leases.ack(conn, self.name, jobs)

    def ack_and_claim(
        self, done: Iterable[Lease], limit: int, *, visibility_timeout_ms: int | None = None,
        lease_ms: int | None = None,
    ) -> tuple[LeaseResult, list[Job]]:
        """Ack ``done`` and claim up to ``limit`` more in ONE transaction (one commit, not two).

        For a consumer loop: the ack is as durable as :meth:`ack_many`'s and
        the claim is the same ``UPDATE ... RETURNING`` as :meth:`claim`.
        """
        lease = _visibility_timeout("ack_and_claim", visibility_timeout_ms, lease_ms)
        with self.file.write() as conn:
            acked = leases.ack(conn, self.name, done)
            return acked, claims.claim(conn, self.name, limit, lease_ms=lease)

    def nack(self, job: Lease, error: str | None = None, *, delay_ms: int | None = None) -> str:
        """Fail one leased job: retry after backoff, or dead letter at max attempts.

        Returns ``"retry"`` or ``"dead"``; StaleLeaseError if the lease was lost.
        """
        result = self.nack_many([job], error, delay_ms=delay_ms)
        if result.rejected:
            raise StaleLeaseError(self._stale_message("nack", result.rejected))
        return "dead" if result.dead else "retry"

    def nack_many(
        self, jobs: Iterable[Lease], error: str | None = None, *, delay_ms: int | None = None
    ) -> NackResult:
        """Nack many leases in ONE transaction (see :meth:`nack`)."""
        with self.file.write() as conn:
            return leases.nack(conn, self.name, jobs, error, delay_ms=delay_ms)

    def release(self, jobs: Iterable[Lease], *, count_attempt: bool = False) -> LeaseResult:
        """Give leases back to ready at once (one transaction); the attempt is not counted."""
        with self.file.write() as conn:
            return leases.release(conn, self.name, jobs, count_attempt=count_attempt)

    def extend(
        self, jobs: Iterable[Lease], *, visibility_timeout_ms: int | None = None,
        lease_ms: int | None = None,
    ) -> LeaseResult:
        """Heartbeat: push the leases' expiry to ``visibility_timeout_ms`` (default: the
        queue's) from now (one transaction); ``lease_ms`` is its deprecated name."""
        lease = _visibility_timeout("extend", visibility_timeout_ms, lease_ms)
        with self.file.write() as conn:
            return leases.extend(conn, self.name, jobs, lease_ms=lease)

    def _stale_message(self, action: str, ids: list[int]) -> str:
        return (
            f"cannot {action} job {ids[0]} of queue {self.name!r}: its lease token is stale "
            "(the lease expired and another worker claimed it, or it was acked, released or "
            "removed); nothing was changed. Extend leases of long jobs, or raise "
            "visibility_timeout_ms."
        )

    # -- inspection and admin ---------------------------------------------
    def stats(self) -> QueueStats:
        """Ready, leased, delayed and dead counts and the oldest ready age, from one snapshot."""
        with self.file.read():
            return queue_admin.stats(self.file.conn, self.name)[0]

    def peek(self, limit: int = 10) -> list[JobInfo]:
        check_int(limit, "peek limit", error=QueueConfigError)
        with self.file.read():
            return queue_admin.peek(self.file.conn, self.name, limit)

    def get(self, job_id: int) -> JobInfo:
        check_int(job_id, "job id")
        with self.file.read():
            return queue_admin.get_job(self.file.conn, self.name, job_id)

    def remove(self, job_id: int) -> str:
        """Delete one job, queued, leased or dead (one transaction); returns its state."""
        check_int(job_id, "job id")
        with self.file.write() as conn:
            return queue_admin.remove_job(conn, self.name, job_id)

    def purge(self, *, include_leased: bool = False) -> int:
        """Delete ready and delayed jobs (and leased with ``include_leased``) in one transaction."""
        with self.file.write() as conn:
            return queue_admin.purge(conn, self.name, include_leased=include_leased)

    def sweep_expired(self) -> int:
        """Delete jobs past their TTL that no live lease holds, in steps of at most 10,000
        rows and 8 MiB, each one transaction."""
        return queue_admin.sweep_expired(self.file, self.name)

    def dead_letters(self, limit: int | None = None) -> list[JobInfo]:
        check_optional_int(limit, "dead letters limit", error=QueueConfigError,
                           none_means="all")
        with self.file.read():
            return queue_admin.dead_letters(self.file.conn, self.name, limit)

    def requeue_dead(self, job_ids: Iterable[int] | None = None) -> list[int]:
        """Move dead letters (all, or these) back to ready, attempts reset (one transaction)."""
        with self.file.write() as conn:
            return queue_admin.requeue_dead(conn, self.name, job_ids)

    def purge_dead(self, job_ids: Iterable[int] | None = None) -> int:
        with self.file.write() as conn:
            return queue_admin.purge_dead(conn, self.name, job_ids)

    def counters(self) -> queue_admin.QueueCounters:
        """Jobs ever acked, failed and dead-lettered (one read); UnknownQueueError if missing."""
        with self.file.read() as conn:
            return queue_admin.counters(conn, self.name)

    # -- workers -------------------------------------------------------------
    def register_worker(self, *, host: str, pid: int, concurrency: int, ttl_ms: int) -> int:
        """Record a running worker, alive for ``ttl_ms`` unless it beats (one transaction);
        its id. UnknownQueueError if the queue does not exist."""
        check_int(pid, "worker pid")
        check_int(concurrency, "worker concurrency", low=1)
        # A worker's ttl is added to the clock in SQL: MAX_STORED keeps the sum in 64 bits.
        check_int(ttl_ms, "worker ttl_ms", low=1, high=MAX_STORED)
        with self.file.write() as conn:
            return queue_workers.register(
                conn, self.name, host=host, pid=pid, concurrency=concurrency, ttl_ms=ttl_ms,
                now=now_ms(),
            )

    def worker_heartbeat(self, worker_id: int, *, jobs_held: int, ttl_ms: int) -> bool:
        """A worker is alive for ``ttl_ms`` more, holding ``jobs_held`` jobs (one transaction);
        False if its row is gone."""
        check_int(worker_id, "worker id")
        check_int(jobs_held, "worker jobs_held")
        check_int(ttl_ms, "worker ttl_ms", low=1, high=MAX_STORED)
        with self.file.write() as conn:
            return queue_workers.beat(
                conn, worker_id, jobs_held=jobs_held, ttl_ms=ttl_ms, now=now_ms()
            )

    def unregister_worker(self, worker_id: int) -> None:
        """A worker stopped: forget its row (one transaction)."""
        check_int(worker_id, "worker id")
        with self.file.write() as conn:
            queue_workers.unregister(conn, worker_id)

    def workers(self) -> list[WorkerInfo]:
        """The queue's registered workers, alive or lost (one read)."""
        with self.file.read() as conn:
            return queue_workers.list_workers(conn, self.name, now=now_ms())


def _visibility_timeout(
    method: str, visibility_timeout_ms: int | None, lease_ms: int | None
) -> int | None:
    """A lease's length has one name, the queue setting's; ``lease_ms`` was its name in
    claim, ack_and_claim and extend before, and still works, with a DeprecationWarning."""
    if lease_ms is None:
        return visibility_timeout_ms
    if visibility_timeout_ms is not None:
        raise TypeError(
            f"{method}() got both 'visibility_timeout_ms' and its deprecated name 'lease_ms'"
        )
    warnings.warn(f"{method}(lease_ms=...) is deprecated; use visibility_timeout_ms=...",
                  DeprecationWarning, stacklevel=4)  # past the translating wrapper
    return lease_ms
