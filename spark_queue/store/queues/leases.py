"""What a lease holder does with its jobs: ack, nack (retry or dead letter), release, extend.

Every call presents ``(job id, lease token)`` pairs (or the claimed
:class:`~spark_queue.store.queues.queue_jobs.Job` objects). A pair whose token no longer
holds the job (the lease expired and another claim took it, or the job was
acked, released or removed) is rejected and changes nothing: fencing. Each
function expects the caller to hold the write transaction.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence

import apsw

from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.connection import now_or
from spark_queue.store.queues.claims import lease_duration_ms
from spark_queue.store.queues.queue_config import QueueConfig
from spark_queue.store.queues.queue_jobs import (
    Job,
    Lease,
    LeaseResult,
    NackResult,
    add_to_counter,
    bury,
    get_queue,
    int_option,
)


def lease_pairs(leases: Iterable[Lease]) -> list[tuple[int, int]]:
    """``(id, token)`` pairs from Jobs or pairs; a job without a token can never match."""
    pairs = []
    for lease in leases:
        if isinstance(lease, Job):
            pairs.append((lease.id, -1 if lease.lease_token is None else lease.lease_token))
        else:
            job_id, token = lease
            pairs.append((check_int(job_id, "job id"),
                          check_int(token, "lease token")))
    return pairs


def _queue_id(conn: apsw.Connection, queue: str) -> int:
    config = get_queue(conn, queue)
    return -1 if config is None else config.id


def ack(conn: apsw.Connection, queue: str, leases: Iterable[Lease]) -> LeaseResult:
    """Delete the jobs whose token still matches; the others are reported as rejected."""
    pairs = lease_pairs(leases)
    qid = _queue_id(conn, queue)
    result = _each_lease(
        conn,
        "DELETE FROM sq_jobs WHERE id = ? AND lease_token = ? AND queue_id = ?",
        pairs,
        lambda job_id, token: (job_id, token, qid),
    )
    if result.done:
        add_to_counter(conn, qid, "acked_total", len(result.done))
    return result


def _each_lease(
    conn: apsw.Connection,
    sql: str,
    pairs: list[tuple[int, int]],
    params: Callable[[int, int], tuple[int, ...]],
) -> LeaseResult:
    """Run ``sql`` once per (id, token); the ids it changed are done, the others rejected.

    One cached statement per job and ``changes()``, not executemany with
    RETURNING: RETURNING materializes each execution's result and halved ack
    throughput in ``python -m benchmarks queue``.
    """
    done: list[int] = []
    rejected: list[int] = []
    execute, changes = conn.execute, conn.changes
    for job_id, token in pairs:
        execute(sql, params(job_id, token))
        (done if changes() else rejected).append(job_id)
    return LeaseResult(done, rejected)


def _rejected(pairs: Sequence[tuple[int, int]], done: Sequence[int]) -> list[int]:
    ok = set(done)
    return [job_id for job_id, _ in pairs if job_id not in ok]


def backoff_ms(config: QueueConfig, attempts: int, rng: random.Random | None = None) -> int:
    """Delay before retry number ``attempts``: exponential from the base, capped, with jitter.

    ``base * 2**(attempts-1)`` capped at ``backoff_cap_ms``, then "equal
    jitter": a uniform pick in the upper half, so retries of a failing batch
    spread out but never come back at once.
    """
    exponent = min(max(attempts - 1, 0), 62)
    delay = min(config.backoff_cap_ms, config.backoff_base_ms << exponent)
    half = delay // 2
    return half + (rng or random).randint(0, delay - half)


def nack(
    conn: apsw.Connection,
    queue: str,
    leases: Iterable[Lease],
    error: str | None = None,
    *,
    delay_ms: int | None = None,
    now_ms: int | None = None,
) -> NackResult:
    """Give the jobs back for a retry after a backoff, or to the dead letters at max attempts.

    ``error`` is kept as the job's ``last_error``. ``delay_ms`` replaces the
    computed backoff. Stale tokens are rejected and change nothing.
    """
    pairs = lease_pairs(leases)
    config = get_queue(conn, queue)
    if config is None:
        return NackResult([], [], [job_id for job_id, _ in pairs])
    if delay_ms is not None:
        int_option(0, "delay_ms", delay_ms, 0, False)
    now = now_or(now_ms)
    retried, dead, retry_at = [], [], []
    for job_id, token in pairs:
        row = conn.execute(
            "SELECT attempts, coalesce(max_attempts, ?) FROM sq_jobs "
            "WHERE id = ? AND lease_token = ? AND queue_id = ?",
            (config.max_attempts, job_id, token, config.id),
        ).fetchone()
        if row is None:
            continue
        attempts, allowed = row
        if attempts >= allowed:
            bury(conn, config.id, [job_id], error, now)
            dead.append(job_id)
            continue
        wait = backoff_ms(config, attempts) if delay_ms is None else delay_ms
        conn.execute(
            "UPDATE sq_jobs SET lease_token = NULL, lease_expires_at = NULL, available_at = ?, "
            "last_error = ? WHERE id = ?",
            (now + wait, error, job_id),
        )
        retried.append(job_id)
        retry_at.append(now + wait)
    if retried or dead:
        add_to_counter(conn, config.id, "failed_total", len(retried) + len(dead))
    return NackResult(retried, dead, _rejected(pairs, retried + dead), tuple(retry_at))


def release(
    conn: apsw.Connection,
    queue: str,
    leases: Iterable[Lease],
    *,
    count_attempt: bool = False,
) -> LeaseResult:
    """Return leased jobs to ready at once, in their old place in the queue.

    Unless ``count_attempt``, the claim's attempt is given back: use this for
    jobs a worker claimed but never started (shutdown).
    """
    pairs = lease_pairs(leases)
    qid = _queue_id(conn, queue)
    back = 0 if count_attempt else 1
    return _each_lease(
        conn,
        "UPDATE sq_jobs SET lease_token = NULL, lease_expires_at = NULL, "
        "attempts = max(attempts - ?, 0) WHERE id = ? AND lease_token = ? AND queue_id = ?",
        pairs,
        lambda job_id, token: (back, job_id, token, qid),
    )


def extend(
    conn: apsw.Connection,
    queue: str,
    leases: Iterable[Lease],
    *,
    lease_ms: int | None = None,
    now_ms: int | None = None,
) -> LeaseResult:
    """Heartbeat: the leases whose token still matches now expire ``lease_ms`` from now.

    In a queue with ``max_leased``, only leases that have not expired yet are extended.
    """
    pairs = lease_pairs(leases)
    config = get_queue(conn, queue)
    if config is None or not pairs:
        return LeaseResult([], [job_id for job_id, _ in pairs])
    now = now_or(now_ms)
    expires = now + lease_duration_ms(config, lease_ms)
    if config.max_leased is not None:
        # A capped queue stopped counting a lease once it expired and may have
        # let another job in: reviving it would exceed the cap
        # (test_queue_controls.py::test_a_late_heartbeat_cannot_revive_a_lease_past_the_cap).
        return _each_lease(
            conn,
            "UPDATE sq_jobs SET lease_expires_at = ? WHERE id = ? AND lease_token = ? "
            "AND queue_id = ? AND lease_expires_at > ?",
            pairs,
            lambda job_id, token: (expires, job_id, token, config.id, now),
        )
    return _each_lease(
        conn,
        "UPDATE sq_jobs SET lease_expires_at = ? WHERE id = ? AND lease_token = ? AND queue_id = ?",
        pairs,
        lambda job_id, token: (expires, job_id, token, config.id),
    )
