"""Queue controls a claim obeys: pause, a cap on live leases, and a shared rate limit.

All three are settings in the queue's ``sq_queues`` row and are enforced
inside the claim's write transaction, so they hold across every worker
process and thread with no coordinator:

- ``paused``: a claim returns nothing. Enqueues still land; leased jobs can
  still be acked, nacked, released and extended.
- ``max_leased``: at most N jobs of the queue hold a live lease at once. The
  count comes from ``sq_queue_leases`` (a superset of the live leases that
  only capped queues write; see ``schema._V3_CONTROLS``) joined to the jobs.
  A lease that expired no longer counts (its job is claimable again), and in a
  capped queue an expired lease cannot be revived by a late heartbeat.
- ``rate_limit_per_s`` with ``rate_burst``: a token bucket. Its state
  (``rate_tokens`` at ``rate_updated_ms``) is in the row; a claim refills it
  from the time elapsed, takes one token per job it delivers, and writes the
  state back. The bucket holds at most ``rate_burst`` tokens (default: the
  rate, at least 1), so in any window of t seconds at most
  ``burst + rate * t`` jobs are claimed, however many workers poll.

A claim that the controls refuse writes nothing: it does not change
``PRAGMA data_version``, so it never wakes other idle workers
(``tests/store/queues/test_queue_controls.py::test_a_refused_claim_writes_nothing``).
:func:`admission` answers the same question read-only, for workers deciding
how long to wait, for stats and for metrics.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import apsw

from spark_queue.store.file.connection import one_row

if TYPE_CHECKING:
    from spark_queue.store.queues.queue_config import QueueConfig

PAUSED = "paused"
MAX_LEASED = "max_leased"
RATE_LIMIT = "rate_limit"


class Admission(NamedTuple):
    """What a claim on the queue may take right now.

    ``allowed`` is the most jobs a claim may lease (None: no limit);
    ``held_by`` names what holds claims back when ``allowed`` is 0
    (``"paused"``, ``"max_leased"`` or ``"rate_limit"``); ``retry_after_ms``
    is when that may change by itself (the next token, the earliest live
    lease's expiry; None when only a change of setting or an ack frees it).
    ``leased`` counts live leases when ``max_leased`` is set; ``rate_tokens``
    is the bucket's content when a rate limit is set.
    """

    allowed: int | None
    held_by: str | None = None
    retry_after_ms: int | None = None
    leased: int | None = None
    rate_tokens: float | None = None


OPEN = Admission(None)


def controlled(config: QueueConfig) -> bool:
    """True when a claim must consult :func:`admission` (the fast path skips it)."""
    return bool(config.paused) or config.max_leased is not None or (
        config.rate_limit_per_s is not None
    )


def bucket_capacity(config: QueueConfig) -> float:
    """The bucket's size; only a rate-limited queue has a bucket."""
    assert config.rate_limit_per_s is not None, "only a rate-limited queue has a bucket"
    if config.rate_burst is not None:
        return float(config.rate_burst)
    return max(1.0, float(config.rate_limit_per_s))


def bucket_tokens(config: QueueConfig, now: int) -> float:
    """Tokens in the bucket at ``now``: the stored ones refilled for the time since."""
    assert config.rate_limit_per_s is not None, "only a rate-limited queue has a bucket"
    capacity = bucket_capacity(config)
    if config.rate_tokens is None or config.rate_updated_ms is None:
        return capacity  # a new limit starts with a full bucket
    elapsed_ms = max(0, now - config.rate_updated_ms)  # a clock stepping back adds nothing
    return min(capacity, config.rate_tokens + elapsed_ms * config.rate_limit_per_s / 1000)


def live_leases(conn: apsw.Connection, queue_id: int, now: int) -> tuple[int, int | None]:
    """``(count, earliest expiry)`` of the live leases of a capped queue."""
    count, earliest = one_row(conn.execute(
        "SELECT count(*), min(j.lease_expires_at) FROM sq_queue_leases l "
        "JOIN sq_jobs j ON j.id = l.job_id "
        "WHERE l.queue_id = ? AND j.lease_expires_at > ?",
        (queue_id, now),
    ))
    return count, earliest


def admission(conn: apsw.Connection, config: QueueConfig, now: int) -> Admission:
    """How many jobs a claim at ``now`` may take, and what holds it back. Reads only."""
    if not controlled(config):
        return OPEN
    if config.paused:
        return Admission(0, PAUSED)
    allowed: int | None = None
    held_by = None
    retry_after_ms = None
    leased = tokens = None
    if config.max_leased is not None:
        leased, earliest = live_leases(conn, config.id, now)
        allowed = max(0, config.max_leased - leased)
        if allowed == 0:
            held_by = MAX_LEASED
            retry_after_ms = None if earliest is None else max(1, earliest - now)
    if config.rate_limit_per_s is not None:
        tokens = bucket_tokens(config, now)
        # The epsilon keeps 2.9999999 tokens (float refill) from counting as 2.
        whole = math.floor(tokens + 1e-9)
        if held_by is None and whole < 1:
            held_by = RATE_LIMIT
            retry_after_ms = max(1, math.ceil((1 - tokens) * 1000 / config.rate_limit_per_s))
        allowed = whole if allowed is None else min(allowed, whole)
    return Admission(allowed, held_by, retry_after_ms, leased, tokens)


def record_claim(
    conn: apsw.Connection, config: QueueConfig, job_ids: Sequence[int], now: int
) -> None:
    """After a claim delivered ``job_ids``: track their leases and take their tokens.

    Runs only when the claim wrote anyway, so a refused claim stays write-free.
    """
    if config.max_leased is not None:
        # One statement over a JSON array: half the cost of an executemany of pairs.
        conn.execute(
            "INSERT OR IGNORE INTO sq_queue_leases (queue_id, job_id) "
            "SELECT ?, value FROM json_each(?)",
            (config.id, json.dumps(list(job_ids))),
        )
        # Forget jobs that were acked, released, nacked or whose lease ran out:
        # the table stays about max_leased rows long.
        conn.execute(
            "DELETE FROM sq_queue_leases WHERE queue_id = ? AND NOT EXISTS ("
            "SELECT 1 FROM sq_jobs j WHERE j.id = sq_queue_leases.job_id "
            "AND j.lease_expires_at > ?)",
            (config.id, now),
        )
    if config.rate_limit_per_s is not None:
        tokens = bucket_tokens(config, now) - len(job_ids)
        updated = now if config.rate_updated_ms is None else max(now, config.rate_updated_ms)
        conn.execute(
            "UPDATE sq_queues SET rate_tokens = ?, rate_updated_ms = ? WHERE id = ?",
            (tokens, updated, config.id),
        )


def track_existing_leases(conn: apsw.Connection, queue_id: int) -> None:
    """A cap was just set: start tracking the leases claimed before it (one scan)."""
    conn.execute(
        "INSERT OR IGNORE INTO sq_queue_leases (queue_id, job_id) "
        "SELECT queue_id, id FROM sq_jobs WHERE queue_id = ? AND lease_token IS NOT NULL",
        (queue_id,),
    )


def untrack_leases(conn: apsw.Connection, queue_id: int) -> None:
    conn.execute("DELETE FROM sq_queue_leases WHERE queue_id = ?", (queue_id,))


def carry_bucket(
    conn: apsw.Connection, old: QueueConfig, new: QueueConfig, now: int
) -> None:
    """After the rate settings changed from ``old`` to ``new``: keep the bucket honest.

    Time before the change is credited at the old rate, then the content is
    clamped to the new capacity, so raising the burst never hands out tokens
    nobody earned. Removing the limit forgets the bucket.
    """
    if new.rate_limit_per_s is None:
        tokens, updated = None, None
    elif old.rate_limit_per_s is None:
        tokens, updated = bucket_capacity(new), now
    else:
        tokens = min(bucket_capacity(new), bucket_tokens(old, now))
        updated = now if old.rate_updated_ms is None else max(now, old.rate_updated_ms)
    conn.execute(
        "UPDATE sq_queues SET rate_tokens = ?, rate_updated_ms = ? WHERE id = ?",
        (tokens, updated, new.id),
    )
