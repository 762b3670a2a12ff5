"""Dead-letter retention: each queue's ``dead_retention_ms`` (age) and ``dead_retention_rows``
(count), applied by housekeeping (:mod:`spark_queue.store.floor.housekeeping`) in steps of at
most ``STEP_ROWS`` rows and ``STEP_BYTES`` bytes, oldest first. A queue with neither keeps
its dead letters until someone requeues or purges them; a queue whose setting another
SQLite client wrote against the rule is skipped and named in ``problems``."""

from __future__ import annotations

import apsw

from spark_queue.store.file.connection import Row, StoreConnection, first_value
from spark_queue.store.file.steps import Budget, Done, MayStep, in_steps, rows_within, size_sql
from spark_queue.store.queues.queue_config import bad_settings


def prune_dead_letters(
    file: StoreConnection, *, at_ms: int, may_step: MayStep | None = None,
    problems: list[str] | None = None,
) -> int | None:
    """Delete every queue's dead letters beyond its retention, in steps; returns how many,
    or None when ``may_step`` stopped it. A queue whose stored retention breaks the rule is
    skipped, its problem appended to ``problems``."""
    with file.read() as conn:
        queues: list[Row] = conn.execute(
            "SELECT id, name, dead_retention_ms, dead_retention_rows FROM sq_queues "
            "WHERE dead_retention_ms IS NOT NULL OR dead_retention_rows IS NOT NULL ORDER BY id"
        ).fetchall()
    total = 0
    for queue_id, name, age_ms, keep_rows in queues:
        bad = bad_settings(name, {"dead_retention_ms": age_ms, "dead_retention_rows": keep_rows})
        if bad:
            if problems is not None:
                problems.extend(bad)
            continue

        def step(conn: apsw.Connection, budget: Budget, queue_id: int = queue_id,
                 age_ms: int | None = age_ms, keep_rows: int | None = keep_rows) -> Done:
            return _delete_oldest(conn, queue_id, budget, age_ms, keep_rows, at_ms)

        deleted = in_steps(file, step, may_step=may_step)
        if deleted is None:
            return None
        total += deleted
    return total


def _delete_oldest(
    conn: apsw.Connection, queue_id: int, budget: Budget, age_ms: int | None,
    keep_rows: int | None, at_ms: int,
) -> Done:
    # Both limits cut a prefix of the queue's dead letters ordered by dead_ms (index
    # sq_dead_jobs_queue): the longer prefix goes, within the budget per step.
    over = 0
    if keep_rows is not None:
        # The dead letters past the newest keep_rows, at most a step's worth and one: read
        # from the newest, so a step reads keep_rows entries and its budget, never the
        # whole backlog (a count of 2,000,000 dead letters took 0.09 s a step, growing
        # with the backlog; issue #59).
        over = first_value(conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM sq_dead_jobs WHERE queue_id = ? "
            "ORDER BY dead_ms DESC, id DESC LIMIT ? OFFSET ?)",
            (queue_id, budget.rows + 1, keep_rows)))
    old = 0
    if age_ms is not None:
        old = first_value(conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM sq_dead_jobs WHERE queue_id = ? "
            "AND dead_ms < ? LIMIT ?)", (queue_id, at_ms - age_ms, budget.rows + 1)))
    wanted = max(over, old)
    if wanted == 0:
        return Done(0, False)
    cut = rows_within(conn, f"SELECT {size_sql('value')} AS size FROM sq_dead_jobs "
                      "WHERE queue_id = ? ORDER BY dead_ms, id LIMIT ?",
                      (queue_id, min(wanted, budget.rows)), budget)
    conn.execute(
        "DELETE FROM sq_dead_jobs WHERE id IN (SELECT id FROM sq_dead_jobs WHERE queue_id = ? "
        "ORDER BY dead_ms, id LIMIT ?)", (queue_id, cut))
    return Done(conn.changes(), cut < wanted)
