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

A writer whose batch ids never skip (Spark's micro-batches: every batch Spark
runs reaches the sink's commit, even one with no rows) asks for ``contiguous``
batches: a batch id past the ledger's next is refused, writing nothing. Such a
gap means the store went back in time under the writer (put back to a copy
older than what it committed), and writing on would lose the batches in between
for good. A sink with no entry yet accepts any first batch id (a store created
after the writer started, a new sink id), with a warning when it is not 0.
``tests/store/test_sinks.py`` guards these rules.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import NamedTuple

import apsw

from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import OffsetRangeError, StoreRewoundError
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.connection import StoreConnection, now_ms
from spark_queue.store.file.names import validate_name
from spark_queue.store.queues import queue_jobs
from spark_queue.store.streams import topic_log

log = logging.getLogger("spark_queue.store")


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


class QueueRows(NamedTuple):
    """A sink batch of ``jobs`` to enqueue into ``queue`` (created if missing)."""

    queue: str
    jobs: Iterable[queue_jobs.NewJob]

    def write(self, conn: apsw.Connection) -> int:
        return len(queue_jobs.enqueue_rows(conn, self.queue, self.jobs))


class TopicRows(NamedTuple):
    """A sink batch of pre-encoded ``chunks`` to append to ``topic``; with no topic, each
    row to the topic its chunk names."""

    topic: str | None
    chunks: Iterable[topic_log.EncodedChunk]

    def write(self, conn: apsw.Connection) -> int:
        if self.topic is not None:
            return len(topic_log.append_encoded(conn, self.topic, self.chunks))
        return sum(len(r) for r in topic_log.append_routed(conn, self.chunks).values())


#: Where a sink's batch goes: the writer chooses once, the store writes what it is given.
SinkRows = QueueRows | TopicRows


def commit_rows(
    file: StoreConnection,
    sink_id: str | None,
    batch_id: int | None,
    rows: SinkRows,
    *,
    contiguous: bool = False,
) -> SinkCommit:
    """:func:`commit_batch` of ``rows`` (``Store.commit_sink_batch``); the iterables are
    consumed inside the transaction."""
    return commit_batch(file, sink_id, batch_id, rows.write, contiguous=contiguous)


def commit_batch(
    file: StoreConnection,
    sink_id: str | None,
    batch_id: int | None,
    write: Callable[[apsw.Connection], int],
    *,
    contiguous: bool = False,
) -> SinkCommit:
    """Run ``write(conn)`` and record the batch in the ledger, in ONE write transaction.

    ``write`` inserts the batch's rows and returns how many it wrote. If
    ``batch_id`` is at or below the sink's ``last_batch_id`` nothing is
    written and the result says ``skipped``. With ``contiguous``, a
    ``batch_id`` past ``last_batch_id + 1`` raises StoreRewoundError and
    nothing is written (see the module's docstring). With ``sink_id`` and
    ``batch_id`` both None the rows are written in one transaction with no
    ledger entry (a one-off batch job). Either all rows and the entry are
    durable on return, or (on any error) none of them. It commits through the door of
    ``file`` (its durability, ``replicated`` included: the return, a skip's too, waits until
    the replica holds the ledger entry).
    """
    if (sink_id is None) != (batch_id is None):
        raise OffsetRangeError(
            "commit_batch needs both sink_id and batch_id (exactly-once) or neither "
            f"(one-off write); got sink_id={sink_id!r}, batch_id={batch_id!r}."
        )
    if sink_id is not None:
        validate_name(sink_id, "sink")
        check_int(batch_id, "batch_id", error=OffsetRangeError)
    with file.write() as conn:
        if sink_id is None or batch_id is None:  # both None (checked above): no ledger entry
            return SinkCommit(None, None, write(conn), False, None)
        entry = ledger_entry(conn, sink_id)
        if entry is not None and batch_id <= entry.last_batch_id:
            return SinkCommit(sink_id, batch_id, 0, True, entry.last_batch_id)
        if contiguous:
            check_next(conn, sink_id, batch_id, entry)
        rows = write(conn)
        conn.execute(
            "INSERT INTO sq_sink_commits (sink_id, last_batch_id, rows, updated_ms) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (sink_id) DO UPDATE SET "
            "last_batch_id = excluded.last_batch_id, rows = rows + excluded.rows, "
            "updated_ms = excluded.updated_ms",
            (sink_id, batch_id, rows, now_ms()),
        )
        return SinkCommit(sink_id, batch_id, rows, False, batch_id)


def check_next(
    conn: apsw.Connection, sink_id: str, batch_id: int, entry: SinkLedgerEntry | None
) -> None:
    """Refuse a batch past the ledger's next one (the store went back in time); warn about
    a sink's first batch that is not 0 (nothing can tell a new sink from a store put back
    to a copy older than its first commit)."""
    if entry is None:
        if batch_id > 0:
            log.warning(
                "sink %r commits batch %d into %r, which has no ledger entry for it: a store "
                "created after the query started, or a new sinkId; if it was put back to a "
                "copy older than the sink's first commit, batches 0 to %d are missing from it.",
                sink_id, batch_id, conn.filename, batch_id - 1,
            )
        return
    last = entry.last_batch_id
    if batch_id == last + 1:
        return
    missing = (f"batch {last + 1}, which the query's checkpoint counts as committed, is"
               if batch_id == last + 2 else
               f"batches {last + 1} to {batch_id - 1}, which the query's checkpoint counts as "
               "committed, are")
    raise StoreRewoundError(
        f"{FORMAT_NAME} sink {sink_id!r} commits batch {batch_id}, but the ledger of "
        f"{conn.filename!r} ends at batch {last}: {missing} not in the store (it was put "
        "back to a copy older than the checkpoint: a restored backup or replica), and "
        f"writing batch {batch_id} would leave them out for good; nothing was written. Ways "
        "out: put back a copy no older than the checkpoint (a newer backup, the replica) and "
        "restart the query; or, to accept the loss and go on, record those batches as "
        "committed with any SQLite client: UPDATE sq_sink_commits SET last_batch_id = "
        f"{batch_id - 1} WHERE sink_id = '{sink_id}'; or give the query a new "
        "checkpointLocation (and a new sinkId if you set one) "
        "(docs/operations.md#a-store-older-than-a-checkpoint)."
    )
