"""Claims: leasing up to N due jobs under one fresh token (the queue's hot path).

A claim sets the lease columns only, so the claim index
``(queue_id, priority DESC, available_at)`` is not rewritten (a third more
claim+ack throughput than moving ``available_at`` to the lease expiry, in
``python -m benchmarks queue``). The price: a claim walks past the
queue's live leases at the head of the index, so its cost grows with the
jobs in flight, never with the backlog. A lease that expired without ack or
nack makes its job claimable again by the same scan, so no reaper is needed;
the next claim counts the attempt.
"""

from __future__ import annotations

import secrets

import apsw

from spark_queue.errors import QueueConfigError
from spark_queue.setting_table import QUEUE_SETTING, check_setting
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.codec import decode_value
from spark_queue.store.file.connection import Row, now_or
from spark_queue.store.queues import controls
from spark_queue.store.queues.queue_config import QueueConfig
from spark_queue.store.queues.queue_jobs import Job, bury, get_queue

_CLAIM = (
    "UPDATE sq_jobs SET lease_token = ?, lease_expires_at = ?, attempts = attempts + 1 "
    "WHERE id IN (SELECT id FROM sq_jobs WHERE queue_id = ? AND available_at <= ? "
    "AND (lease_token IS NULL OR lease_expires_at <= ?) "
    "AND (expires_at IS NULL OR expires_at > ?) "
    "ORDER BY priority DESC, available_at, id LIMIT ?) "
    "RETURNING id, priority, attempts, max_attempts, enqueued_ms, expires_at, "
    "idempotency_key, value, value_type, last_error"
)


def new_token() -> int:
    """A random 63-bit lease token: unguessable, and never 0 or NULL."""
    return secrets.randbits(63) or 1


def claim(
    conn: apsw.Connection,
    queue: str,
    limit: int,
    *,
    lease_ms: int | None = None,
    now_ms: int | None = None,
) -> list[Job]:
    """Lease up to ``limit`` due jobs for ``lease_ms`` (default: the queue's visibility timeout).

    Returns them ordered ``priority DESC, id``, all under one token. A job
    whose previous lease expired on its last allowed attempt is moved to the
    dead letters instead of being delivered again. An unknown queue has no jobs.
    A paused queue, one at its ``max_leased`` or one whose rate limit has no
    token left returns fewer jobs or none (:mod:`.controls`).
    """
    check_int(limit, "claim limit", low=1, error=QueueConfigError)
    config = get_queue(conn, queue)
    if config is None:
        return []
    lease_ms = lease_duration_ms(config, lease_ms)
    now = now_or(now_ms)
    if not controls.controlled(config):
        return _claim_rows(conn, config, limit, lease_ms, now)
    allowed = controls.admission(conn, config, now).allowed
    if allowed == 0:
        return []  # refused without a write (see controls.py)
    if allowed is not None:
        limit = min(limit, allowed)
    jobs = _claim_rows(conn, config, limit, lease_ms, now)
    if jobs:
        controls.record_claim(conn, config, [job.id for job in jobs], now)
    return jobs


def _claim_rows(
    conn: apsw.Connection, config: QueueConfig, limit: int, lease_ms: int, now: int
) -> list[Job]:
    expires = now + lease_ms
    token = new_token()
    jobs: list[Job] = []
    while len(jobs) < limit:
        rows: list[Row] = conn.execute(
            _CLAIM, (token, expires, config.id, now, now, now, limit - len(jobs))
        ).fetchall()
        exhausted = []
        for id_, prio, attempts, max_att, enq, exp, key, value, vtype, last_error in rows:
            allowed = config.max_attempts if max_att is None else max_att
            if attempts > allowed:
                exhausted.append((id_, attempts - 1, last_error))
                continue
            jobs.append(
                Job(
                    id_,
                    config.name,
                    decode_value(value, vtype),
                    prio,
                    attempts,
                    allowed,
                    enq,
                    token,
                    expires,
                    exp,
                    key,
                    last_error,
                )
            )
        if not exhausted:
            break
        for id_, attempts, last_error in exhausted:
            error = f"the lease of attempt {attempts} expired without ack or nack"
            if last_error:
                error += f"; last error before it: {last_error}"
            bury(conn, config.id, [id_], error, now, attempts=attempts)
        if len(rows) < limit:
            break
    jobs.sort(key=lambda j: (-j.priority, j.id))
    return jobs


def lease_duration_ms(config: QueueConfig, lease_ms: int | None) -> int:
    if lease_ms is None:
        return config.visibility_timeout_ms
    # The lease given for one claim overrides the queue's setting: checked as it.
    checked: int = check_setting(QUEUE_SETTING["visibility_timeout_ms"], lease_ms,
                                 error=QueueConfigError, owner="")
    return checked
