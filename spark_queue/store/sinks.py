"""The sink ledger: exactly-once commits of numbered batches into the store.

A writer that numbers its batches (a Spark streaming query, or any producer
that can replay) names itself with a ``sink_id`` and commits each batch with
:func:`commit_batch`: the batch's rows and the ledger entry
``sq_sink_commits(sink_id, last_batch_id, rows, updated_ms)`` go in ONE write
transaction, and a batch whose id is at or below the ledger's
``last_batch_id`` is skipped without writing anything. A crash before the
COMMIT leaves neither rows nor entry; a crash after it leaves both, so the
replay is skipped. ``rows`` is the total number of rows the sink has committed
(for a queue, rows whose idempotency key matched an existing job count too).
``tests/store/test_sinks.py`` guards these rules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

import apsw

from spark_queue.errors import OffsetRangeError
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.connection import now_ms, write_transaction
from spark_queue.store.file.names import validate_name
from spark_queue.store.queues import queue_jobs
from spark_queue.store.streams import topic_log


class SinkLedgerEntry(NamedTuple):
    """What the ledger holds for one sink."""

    sink_id: str
    last_batch_id: int
    rows: int
    updated_ms: int


class SinkCommit(NamedTuple):
    """What :func:`commit_batch` did: ``skipped`` when the batch was already committed."""

    sink_id: str | None
    batch_id: int | None
    rows: int
    skipped: bool
    last_batch_id: int | None


def ledger_entry(conn: apsw.Connection, sink_id: str) -> SinkLedgerEntry | None:
    """The ledger entry of ``sink_id``, or None if it never committed."""
    row = conn.execute(
        "SELECT sink_id, last_batch_id, rows, updated_ms FROM sq_sink_commits WHERE sink_id = ?",
        (validate_name(sink_id, "sink"),),
    ).fetchone()
    return None if row is None else SinkLedgerEntry(*row)


def list_ledger(conn: apsw.Connection) -> list[SinkLedgerEntry]:
    """Every sink's ledger entry, by sink id."""
    return [
        SinkLedgerEntry(*row)
        for row in conn.execute(
            "SELECT sink_id, last_batch_id, rows, updated_ms FROM sq_sink_commits ORDER BY sink_id"
        )
    ]


def commit_rows(
    conn: apsw.Connection,
    sink_id: str | None,
    batch_id: int | None,
    *,
    topic: str | None,
    queue: str | None,
    chunks: Iterable[topic_log.EncodedChunk],
    jobs: Iterable[queue_jobs.NewJob],
) -> SinkCommit:
    """:func:`commit_batch` of ``jobs`` into ``queue``, else of ``chunks`` into ``topic``, else
    of each chunk's rows into the topic it names (``Store.commit_sink_batch``)."""
    if queue is not None:
        def write(conn: apsw.Connection) -> int:
            return len(queue_jobs.enqueue_rows(conn, queue, jobs))
    elif topic is not None:
        def write(conn: apsw.Connection) -> int:
            return len(topic_log.append_encoded(conn, topic, chunks))
    else:
        def write(conn: apsw.Connection) -> int:
            return sum(len(r) for r in topic_log.append_routed(conn, chunks).values())
    return commit_batch(conn, sink_id, batch_id, write)


def commit_batch(
    conn: apsw.Connection,
    sink_id: str | None,
    batch_id: int | None,
    write: Callable[[apsw.Connection], int],
) -> SinkCommit:
    """Run ``write(conn)`` and record the batch in the ledger, in ONE write transaction.

    ``write`` inserts the batch's rows and returns how many it wrote. If
    ``batch_id`` is at or below the sink's ``last_batch_id`` nothing is
    written and the result says ``skipped``. With ``sink_id`` and
    ``batch_id`` both None the rows are written in one transaction with no
    ledger entry (a one-off batch job). Either all rows and the entry are
    durable on return, or (on any error) none of them.
    """
    if (sink_id is None) != (batch_id is None):
        raise OffsetRangeError(
            "commit_batch needs both sink_id and batch_id (exactly-once) or neither "
            f"(one-off write); got sink_id={sink_id!r}, batch_id={batch_id!r}."
        )
    if sink_id is not None:
        validate_name(sink_id, "sink")
        check_int(batch_id, "batch_id", error=OffsetRangeError)
    with write_transaction(conn):
        if sink_id is None or batch_id is None:  # both None (checked above): no ledger entry
            return SinkCommit(None, None, write(conn), False, None)
        entry = ledger_entry(conn, sink_id)
        if entry is not None and batch_id <= entry.last_batch_id:
            return SinkCommit(sink_id, batch_id, 0, True, entry.last_batch_id)
        rows = write(conn)
        conn.execute(
            "INSERT INTO sq_sink_commits (sink_id, last_batch_id, rows, updated_ms) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (sink_id) DO UPDATE SET "
            "last_batch_id = excluded.last_batch_id, rows = rows + excluded.rows, "
            "updated_ms = excluded.updated_ms",
            (sink_id, batch_id, rows, now_ms()),
        )
        return SinkCommit(sink_id, batch_id, rows, False, batch_id)
