"""Worker registrations: which workers run on a queue, alive or not, what they hold.

A worker writes its row when it starts (:func:`register`), refreshes it at each
heartbeat with the jobs it holds (:func:`beat`), and deletes it when it stops
(:func:`unregister`). A row whose ``expires_ms`` has passed belongs to a worker
that died without stopping (SIGKILL, a lost host): it is listed as not alive,
and deleted by the next :func:`register` on its queue a day later. The rows are
an operator's view (``sqliteq queue workers``), never used to decide a lease:
leases fence themselves with their tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw

from spark_queue.store.queues.queue_admin import require_queue

# How long the row of a worker that died without stopping stays listed.
LOST_KEPT_MS = 86_400_000

_SELECT_ALL = (
    "SELECT w.id, q.name, w.host, w.pid, w.concurrency, w.started_ms, w.seen_ms, w.expires_ms, "
    "w.jobs_held FROM sq_workers w JOIN sq_queues q ON q.id = w.queue_id "
    "ORDER BY q.name, w.started_ms, w.id"
)
_SELECT_QUEUE = _SELECT_ALL.replace("ORDER BY", "WHERE q.name = ? ORDER BY")


@dataclass(frozen=True)
class WorkerInfo:
    """One worker of a queue as its last heartbeat left it; ``alive``: that heartbeat is
    recent (``expires_ms`` is later than the time of the read)."""

    id: int
    queue: str
    host: str
    pid: int
    concurrency: int
    started_ms: int
    seen_ms: int
    expires_ms: int
    jobs_held: int
    alive: bool


def register(
    conn: apsw.Connection, queue: str, *, host: str, pid: int, concurrency: int, ttl_ms: int,
    now: int,
) -> int:
    """Add a worker's row (alive until ``now + ttl_ms``); its id. Forgets long-lost workers."""
    config = require_queue(conn, queue)
    conn.execute(
        "DELETE FROM sq_workers WHERE queue_id = ? AND expires_ms < ?",
        (config.id, now - LOST_KEPT_MS),
    )
    row = conn.execute(
        "INSERT INTO sq_workers (queue_id, host, pid, concurrency, started_ms, seen_ms, "
        "expires_ms, jobs_held) VALUES (?, ?, ?, ?, ?, ?, ?, 0) RETURNING id",
        (config.id, host, pid, concurrency, now, now, now + ttl_ms),
    ).fetchone()
    assert row is not None
    return int(row[0])


def beat(conn: apsw.Connection, worker_id: int, *, jobs_held: int, ttl_ms: int, now: int) -> bool:
    """Refresh a worker's row; False if it is gone (its queue was deleted)."""
    row = conn.execute(
        "UPDATE sq_workers SET seen_ms = ?, expires_ms = ?, jobs_held = ? WHERE id = ? "
        "RETURNING id",
        (now, now + ttl_ms, jobs_held, worker_id),
    ).fetchone()
    return row is not None


def unregister(conn: apsw.Connection, worker_id: int) -> None:
    conn.execute("DELETE FROM sq_workers WHERE id = ?", (worker_id,))


def list_workers(conn: apsw.Connection, queue: str | None, *, now: int) -> list[WorkerInfo]:
    """The workers of ``queue`` (or of every queue), by queue and start."""
    sql = _SELECT_ALL if queue is None else _SELECT_QUEUE
    rows: list[Any] = conn.execute(sql, () if queue is None else (queue,)).fetchall()
    return [
        WorkerInfo(id_, name, host, pid, slots, started, seen, expires, held, expires > now)
        for id_, name, host, pid, slots, started, seen, expires, held in rows
    ]
