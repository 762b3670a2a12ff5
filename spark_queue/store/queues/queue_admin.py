"""Queue administration: settings, stats, peeking, purging, dead letters, single jobs, TTL sweep.

The hot path lives beside it: enqueue in :mod:`~spark_queue.store.queues.queue_jobs`,
claim in :mod:`~spark_queue.store.queues.claims`, ack, nack and extend in
:mod:`~spark_queue.store.queues.leases`.
Functions that write expect the caller to hold the write transaction; the
read-only ones expect one read snapshot.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import apsw

from spark_queue.errors import QueueConfigError, UnknownJobError, UnknownQueueError
from spark_queue.setting_table import QUEUE_SETTING, QUEUE_SETTINGS, check_setting
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.codec import decode_value
from spark_queue.store.file.connection import StoreConnection, first_value, now_or, one_row
from spark_queue.store.file.steps import Budget, Done, MayStep, in_steps, rows_within, size_sql
from spark_queue.store.queues import controls
from spark_queue.store.queues.queue_config import (
    CONFIG_COLUMNS,
    QueueConfig,
    bad_settings,
    config_from_row,
)
from spark_queue.store.queues.queue_jobs import ensure_queue, get_queue

# The settings a caller may change (declared in spark_queue/setting_table.py), and those
# None switches off (no limit).
SETTINGS = QUEUE_SETTING
NULLABLE = frozenset(s.name for s in QUEUE_SETTINGS if s.nullable)


class QueueStats(NamedTuple):
    queue: str
    ready: int
    leased: int
    delayed: int
    dead: int
    oldest_ready_age_ms: int | None


class JobInfo(NamedTuple):
    """One job as an operator sees it; ``state``: ``ready``, ``delayed``, ``leased``, ``dead``."""

    id: int
    queue: str
    state: str
    payload: Any
    priority: int
    attempts: int
    max_attempts: int | None
    enqueued_ms: int
    available_at_ms: int | None
    lease_expires_ms: int | None
    expires_ms: int | None
    idempotency_key: str | None
    last_error: str | None
    dead_ms: int | None = None


def require_queue(conn: apsw.Connection, queue: str) -> QueueConfig:
    config = get_queue(conn, queue)
    if config is None:
        raise UnknownQueueError(
            f"queue {queue!r} does not exist in this store; list queues with "
            "`sqliteq queue list PATH`, or enqueue to create it."
        )
    return config


def _check_setting(queue: str, name: str, value: Any) -> Any:
    """The value to store for setting ``name``; QueueConfigError names what is allowed."""
    setting = SETTINGS.get(name)
    if setting is None:
        raise QueueConfigError(
            f"unknown queue setting {name!r}; the settings are {', '.join(SETTINGS)}."
        )
    return check_setting(setting, value, error=QueueConfigError, owner=f"queue {queue!r} setting")


def configure(
    conn: apsw.Connection, queue: str, settings: Mapping[str, Any], *, now_ms: int | None = None
) -> QueueConfig:
    """Create ``queue`` if missing and set the given settings (None switches a limit off).

    Setting ``max_leased`` starts counting the leases already held; changing
    the rate limit keeps the bucket's earned tokens (see
    :func:`~spark_queue.store.queues.controls.carry_bucket`).
    """
    values = {name: _check_setting(queue, name, value) for name, value in settings.items()}
    old = ensure_queue(conn, queue)
    for name, value in values.items():
        # ``name`` is one of the fixed SETTINGS keys checked above, never user text.
        conn.execute(f"UPDATE sq_queues SET {name} = ? WHERE id = ?", (value, old.id))
    new = require_queue(conn, queue)
    if old.max_leased is None and new.max_leased is not None:
        controls.track_existing_leases(conn, new.id)
    elif new.max_leased is None and old.max_leased is not None:
        controls.untrack_leases(conn, new.id)
    if (old.rate_limit_per_s, old.rate_burst) != (new.rate_limit_per_s, new.rate_burst):
        now = now_or(now_ms)
        controls.carry_bucket(conn, old, new, now)
        new = require_queue(conn, queue)
    return new


def list_queues(conn: apsw.Connection) -> list[QueueConfig]:
    rows = conn.execute(f"SELECT {CONFIG_COLUMNS} FROM sq_queues ORDER BY name").fetchall()
    return [config_from_row(row) for row in rows]


def delete_queue(conn: apsw.Connection, queue: str) -> int:
    """Remove the queue with all its jobs and dead letters; returns how many jobs went."""
    config = require_queue(conn, queue)
    jobs: int = first_value(conn.execute(
        "SELECT (SELECT count(*) FROM sq_jobs WHERE queue_id = ?) + "
        "(SELECT count(*) FROM sq_dead_jobs WHERE queue_id = ?)",
        (config.id, config.id),
    ))
    conn.execute("DELETE FROM sq_jobs WHERE queue_id = ?", (config.id,))
    conn.execute("DELETE FROM sq_dead_jobs WHERE queue_id = ?", (config.id,))
    conn.execute("DELETE FROM sq_job_keys WHERE queue_id = ?", (config.id,))
    conn.execute("DELETE FROM sq_queues WHERE id = ?", (config.id,))
    return jobs


def stats(
    conn: apsw.Connection, queue: str | None = None, *, now_ms: int | None = None
) -> list[QueueStats]:
    """Counts per queue (one scan of its jobs); expired leases count as ready (claimable)."""
    now = now_or(now_ms)
    configs = list_queues(conn) if queue is None else [require_queue(conn, queue)]
    result = []
    for config in configs:
        ready, leased, delayed, oldest = one_row(conn.execute(
            "SELECT coalesce(sum(NOT live AND available_at <= :now), 0), coalesce(sum(live), 0), "
            "coalesce(sum(NOT live AND available_at > :now), 0), "
            "min(CASE WHEN NOT live AND available_at <= :now THEN available_at END) "
            "FROM (SELECT available_at, coalesce(lease_expires_at > :now, 0) AS live FROM sq_jobs "
            "WHERE queue_id = :queue AND (expires_at IS NULL OR expires_at > :now))",
            {"now": now, "queue": config.id},
        ))
        dead = first_value(
            conn.execute("SELECT count(*) FROM sq_dead_jobs WHERE queue_id = ?", (config.id,))
        )
        age = None if oldest is None else max(0, now - oldest)
        result.append(QueueStats(config.name, ready, leased, delayed, dead, age))
    return result


_JOB_COLUMNS = (
    "id, priority, attempts, max_attempts, enqueued_ms, available_at, lease_expires_at, "
    "expires_at, idempotency_key, value, value_type, last_error"
)


def _job_info(config: QueueConfig, row: tuple[Any, ...], now: int) -> JobInfo:
    id_, prio, attempts, max_att, enq, avail, lease_end, exp, key, value, vtype, err = row
    if lease_end is not None and lease_end > now:
        state = "leased"
    elif avail > now:
        state = "delayed"
    else:
        state = "ready"
    return JobInfo(
        id_,
        config.name,
        state,
        decode_value(value, vtype),
        prio,
        attempts,
        config.max_attempts if max_att is None else max_att,
        enq,
        avail,
        lease_end,
        exp,
        key,
        err,
    )


def _dead_info(config: QueueConfig, row: tuple[Any, ...]) -> JobInfo:
    id_, prio, attempts, max_att, enq, dead_ms, exp, key, value, vtype, err = row
    return JobInfo(
        id_,
        config.name,
        "dead",
        decode_value(value, vtype),
        prio,
        attempts,
        config.max_attempts if max_att is None else max_att,
        enq,
        None,
        None,
        exp,
        key,
        err,
        dead_ms,
    )


_DEAD_COLUMNS = (
    "id, priority, attempts, max_attempts, enqueued_ms, dead_ms, expires_at, idempotency_key, "
    "value, value_type, last_error"
)


def peek(
    conn: apsw.Connection, queue: str, limit: int = 10, *, now_ms: int | None = None
) -> list[JobInfo]:
    """Jobs in queue order (priority, then age), in flight ones too (see ``state``); no lease."""
    config = require_queue(conn, queue)
    now = now_or(now_ms)
    rows = conn.execute(
        f"SELECT {_JOB_COLUMNS} FROM sq_jobs WHERE queue_id = ? "
        "AND (expires_at IS NULL OR expires_at > ?) "
        "ORDER BY priority DESC, available_at, id LIMIT ?",
        (config.id, now, limit),
    ).fetchall()
    return [_job_info(config, row, now) for row in rows]


def purge(
    conn: apsw.Connection, queue: str, *, include_leased: bool = False, now_ms: int | None = None
) -> int:
    """Delete the queue's ready and delayed jobs (and leased ones if asked); returns how many."""
    config = require_queue(conn, queue)
    if include_leased:
        conn.execute("DELETE FROM sq_jobs WHERE queue_id = ?", (config.id,))
    else:
        now = now_or(now_ms)
        conn.execute(
            "DELETE FROM sq_jobs WHERE queue_id = ? "
            "AND (lease_token IS NULL OR lease_expires_at <= ?)",
            (config.id, now),
        )
    return conn.changes()


def sweep_expired(
    file: StoreConnection, queue: str | None = None, *, now_ms: int | None = None,
    may_step: MayStep | None = None, problems: list[str] | None = None,
) -> int:
    """Delete jobs whose TTL passed and that no live lease holds, in steps of at most
    ``STEP_ROWS`` rows and ``STEP_BYTES`` bytes, each ONE write transaction
    (:mod:`spark_queue.store.file.steps`); returns how many (so far, when ``may_step`` stops
    it).

    Claims never deliver an expired job, sweeping or not; sweeping frees the
    space. Also forgets idempotency keys past the queue's window whose job is gone,
    unless the queue's window breaks the rule (named in ``problems``).
    """
    now = now_or(now_ms)
    with file.read() as conn:
        configs = list_queues(conn) if queue is None else [require_queue(conn, queue)]
    removed = 0
    for config in configs:
        swept = in_steps(file, functools.partial(_sweep_jobs, queue_id=config.id, now=now),
                         may_step=may_step)
        if swept is None:
            return removed
        removed += swept
        bad = bad_settings(config.name, {"idempotency_window_ms": config.idempotency_window_ms})
        if bad:
            if problems is not None:
                problems.extend(bad)
            continue
        forget = functools.partial(_forget_keys, queue_id=config.id,
                                   before_ms=now - config.idempotency_window_ms,
                                   cursor=[_KEYS_START])
        if in_steps(file, forget, may_step=may_step) is None:
            return removed
    return removed


# A job the sweep may delete: past its TTL, and no live lease holds it (index sq_jobs_expiry).
_EXPIRED = ("FROM sq_jobs WHERE queue_id = ? AND expires_at <= ? "
            "AND (lease_token IS NULL OR lease_expires_at <= ?) ORDER BY expires_at, id")


def _sweep_jobs(conn: apsw.Connection, budget: Budget, *, queue_id: int, now: int) -> Done:
    wanted = first_value(conn.execute(
        f"SELECT count(*) FROM (SELECT 1 {_EXPIRED} LIMIT ?)",
        (queue_id, now, now, budget.rows + 1)))
    cut = 0 if wanted == 0 else rows_within(
        conn, f"SELECT {size_sql('value')} AS size {_EXPIRED} LIMIT ?",
        (queue_id, now, now, min(wanted, budget.rows)), budget)
    # Run even when nothing is due: a worker's start proves the store writable with it.
    conn.execute(f"DELETE FROM sq_jobs WHERE id IN (SELECT id {_EXPIRED} LIMIT ?)",
                 (queue_id, now, now, cut))
    return Done(conn.changes(), cut < wanted)


# The key sweep walks index sq_job_keys_age, (queue_id, created_ms) plus the key (the
# table's primary key), from a cursor: the first entry it has not scanned yet. It starts
# below every entry (an integer time, then a key: text sorts above '').
_KEYS_START = (-(2**63), "")


def _forget_keys(conn: apsw.Connection, budget: Budget, *, queue_id: int, before_ms: int,
                 cursor: list[tuple[int, str]]) -> Done:
    """Forget, of the next ``budget.rows`` keys older than ``before_ms`` (from
    ``cursor[0]`` on, which it moves past them), those whose job is gone.

    Bounded by the keys it reads, not only by those it forgets: a backlog of live keys
    past the window (a paused queue, workers down over a weekend) is read a window per
    step, never in one scan under the write lock (2,000,000 of them held it 0.96 s;
    ``tests/store/queues/test_key_sweep.py``). Keys are a few bytes each: the row bound
    is their step's bound."""
    start = cursor[0]
    after = conn.execute(
        "SELECT created_ms, idempotency_key FROM sq_job_keys WHERE queue_id = ? "
        "AND created_ms <= ? AND (created_ms, idempotency_key) >= (?, ?) "
        "ORDER BY created_ms, idempotency_key LIMIT 1 OFFSET ?",
        (queue_id, before_ms, *start, budget.rows)).fetchone()
    # Past the last key of the backlog, the end is the first entry after before_ms. Both
    # ends as row values: SQLite bounds the index range by both only so (with a
    # `created_ms <= ?` beside them every step read to the end of the backlog).
    end = (before_ms + 1, "") if after is None else (after[0], after[1])
    conn.execute(
        "DELETE FROM sq_job_keys WHERE queue_id = ? "
        "AND (created_ms, idempotency_key) >= (?, ?) AND (created_ms, idempotency_key) < (?, ?) "
        "AND NOT EXISTS (SELECT 1 FROM sq_jobs WHERE id = job_id) "
        "AND NOT EXISTS (SELECT 1 FROM sq_dead_jobs WHERE id = job_id)",
        (queue_id, *start, *end))
    cursor[0] = end
    return Done(conn.changes(), after is not None)


def dead_letters(conn: apsw.Connection, queue: str, limit: int | None = None) -> list[JobInfo]:
    """Dead letters of ``queue``, oldest death first."""
    config = require_queue(conn, queue)
    rows = conn.execute(
        f"SELECT {_DEAD_COLUMNS} FROM sq_dead_jobs WHERE queue_id = ? ORDER BY dead_ms, id LIMIT ?",
        (config.id, -1 if limit is None else limit),
    ).fetchall()
    return [_dead_info(config, row) for row in rows]


def requeue_dead(
    conn: apsw.Connection,
    queue: str,
    job_ids: Iterable[int] | None = None,
    *,
    now_ms: int | None = None,
) -> list[int]:
    """Move dead letters (all, or these ids) back to ready with their attempts reset.

    The job keeps its id, payload, priority and idempotency key; a TTL that
    has passed is cleared so the requeued job can run.
    """
    config = require_queue(conn, queue)
    now = now_or(now_ms)
    if job_ids is None:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM sq_dead_jobs WHERE queue_id = ? ORDER BY id", (config.id,)
            )
        ]
    else:
        ids = [check_int(job_id, "job id") for job_id in job_ids]
    moved = []
    for job_id in ids:
        row = conn.execute(
            "INSERT INTO sq_jobs (id, queue_id, priority, available_at, attempts, max_attempts, "
            "expires_at, idempotency_key, enqueued_ms, value, value_type, last_error) "
            "SELECT id, queue_id, priority, ?, 0, max_attempts, "
            "CASE WHEN expires_at > ? THEN expires_at END, idempotency_key, enqueued_ms, value, "
            "value_type, last_error FROM sq_dead_jobs WHERE id = ? AND queue_id = ? RETURNING id",
            (now, now, int(job_id), config.id),
        ).fetchone()
        if row is None:
            raise UnknownJobError(f"queue {queue!r} has no dead letter with id {job_id}.")
        conn.execute("DELETE FROM sq_dead_jobs WHERE id = ?", (job_id,))
        moved.append(row[0])
    return moved


def purge_dead(conn: apsw.Connection, queue: str, job_ids: Iterable[int] | None = None) -> int:
    """Delete dead letters of ``queue`` (all, or these ids); returns how many."""
    config = require_queue(conn, queue)
    if job_ids is None:
        conn.execute("DELETE FROM sq_dead_jobs WHERE queue_id = ?", (config.id,))
        return conn.changes()
    removed = 0
    for job_id in [check_int(job_id, "job id") for job_id in job_ids]:
        conn.execute(
            "DELETE FROM sq_dead_jobs WHERE id = ? AND queue_id = ?", (int(job_id), config.id)
        )
        removed += conn.changes()
    return removed


def get_job(
    conn: apsw.Connection, queue: str, job_id: int, *, now_ms: int | None = None
) -> JobInfo:
    """The job with ``job_id`` in the queue or its dead letters; UnknownJobError otherwise."""
    config = require_queue(conn, queue)
    now = now_or(now_ms)
    row = conn.execute(
        f"SELECT {_JOB_COLUMNS} FROM sq_jobs WHERE id = ? AND queue_id = ?", (job_id, config.id)
    ).fetchone()
    if row is not None:
        return _job_info(config, row, now)
    row = conn.execute(
        f"SELECT {_DEAD_COLUMNS} FROM sq_dead_jobs WHERE id = ? AND queue_id = ?",
        (job_id, config.id),
    ).fetchone()
    if row is not None:
        return _dead_info(config, row)
    raise UnknownJobError(
        f"queue {queue!r} has no job with id {job_id} (it may have been acked, expired or removed)."
    )


def remove_job(conn: apsw.Connection, queue: str, job_id: int) -> str:
    """Delete one job (queued, leased or dead); returns the state it was in."""
    config = require_queue(conn, queue)
    for table, state in (("sq_jobs", "queued"), ("sq_dead_jobs", "dead")):
        # ``table`` is one of two constants, never user text.
        conn.execute(f"DELETE FROM {table} WHERE id = ? AND queue_id = ?", (job_id, config.id))
        if conn.changes():
            return state
    raise UnknownJobError(f"queue {queue!r} has no job with id {job_id}.")


class QueueCounters(NamedTuple):
    """Jobs a queue ever acked, nacked (``failed``: handler failures, retried or dead) and
    moved to the dead letters (by a nack at max attempts or an expired last lease). Counted
    by spark_queue's own ack, nack and claim; deleting the queue resets them."""

    queue: str
    acked: int
    failed: int
    dead_lettered: int


def counters(conn: apsw.Connection, queue: str) -> QueueCounters:
    config = require_queue(conn, queue)
    row = conn.execute(
        "SELECT acked_total, failed_total, dead_total FROM sq_queues WHERE id = ?", (config.id,)
    ).fetchone()
    assert row is not None
    return QueueCounters(queue, *row)
