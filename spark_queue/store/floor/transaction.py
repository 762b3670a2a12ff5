"""A write transaction the caller holds: business rows, events, jobs, offsets and acks in ONE
commit (the transactional outbox, with no dispatcher: docs/transactions.md).

``with store.transaction() as tx:`` runs ``BEGIN IMMEDIATE`` on the store's own
connection; ``tx.execute`` runs the caller's SQL on it, and ``tx.publish``,
``tx.publish_many``, ``tx.enqueue``, ``tx.commit_offsets`` (and ``tx.ack``) write through
the same functions the Store and Queue methods use, so every rule (names, payload limits,
dense offsets, idempotency keys, monotonic offsets, fencing) holds alike. The block's end
commits; an exception leaving it rolls everything back and propagates. A worker hands the
same object to a handler as ``job.transaction`` (spark_queue/worker/job_transaction.py).

A call of this module that raises a spark_queue error leaves the transaction as it was
before the call (a savepoint around each call that writes more than one statement), so
the caller may catch it (a full queue, a payload over its limit) and go on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar, Unpack

import apsw

from spark_queue.errors import QueueConfigError, StaleLeaseError, TransactionClosedError
from spark_queue.job_options import JobOptions
from spark_queue.store.file.connection import (
    StoreConnection,
    savepoint,
    translated,
)
from spark_queue.store.file.sqlite_errors import translate_errors
from spark_queue.store.queues import leases, queue_jobs
from spark_queue.store.queues.queue_jobs import Lease, LeaseResult, NewJob
from spark_queue.store.streams import consumer_offsets, topic_log, topic_reads
from spark_queue.store.streams.publish_one import OnePublisher
from spark_queue.store.streams.topic_reads import Event
from spark_queue.store.streams.topic_schemas import Quarantined

_Result = TypeVar("_Result")
_SQLITE_ERRORS = (apsw.Error, OverflowError, UnicodeEncodeError)  # what translate_errors names


@translated
class Transaction:
    """One write transaction on a Store's connection; see the module docstring.

    >>> with store.transaction() as tx:                  # doctest: +SKIP
    ...     tx.execute("INSERT INTO orders (id, total) VALUES (?, ?)", (7, 120))
    ...     tx.publish("orders", {"id": 7, "total": 120})
    ...     tx.enqueue("emails", {"order": 7})

    Reads of the Store (``store.read``, ``store.topic(name).bounds()``) inside the block see the
    block's own writes; a Store or Queue call that writes raises
    :class:`~spark_queue.errors.TransactionOpenError`.
    """

    __slots__ = ("file", "_one", "_open", "_joined")

    def __init__(self, file: StoreConnection, one: OnePublisher) -> None:
        self.file = file
        self._one = one  # the Store's kept topic rows, shared with Store.publish
        self._open = False
        self._joined = 0  # blocks entered on the open transaction: they join it

    def __repr__(self) -> str:
        return f"Transaction({self.file.path!r}, {'open' if self._open else 'closed'})"

    # -- the block ---------------------------------------------------------------------
    # try/except, not translate_errors' with-block: free when nothing is raised (a one-event
    # transaction is a few statements; `python -m benchmarks store --section single`).
    def __enter__(self) -> Transaction:
        if self._open:
            # `with tx:` on an open transaction (a handler's `with job.transaction as tx:`)
            # joins it: the outermost block commits or rolls back.
            self._joined += 1
            return self
        try:
            self.file.begin()
        except _SQLITE_ERRORS:
            with translate_errors(self.file.path):
                raise
        self._open = True
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._joined:
            self._joined -= 1
            return
        self._open = False
        try:
            self._end(kind is None)
        except _SQLITE_ERRORS:
            with translate_errors(self.file.path):
                raise

    def _end(self, commit: bool) -> None:
        # Whatever the outcome, the Store's kept topic rows are not trusted past this
        # transaction: its savepoints, its own SQL and its triggers may have moved the
        # topics under them (the next Store.publish reads them again).
        self._one.forget()
        conn = self.file.conn
        if not commit:
            self.file.rollback()
            return
        if conn.getautocommit():
            raise TransactionClosedError(
                "the transaction was ended inside its block by SQL of its own (COMMIT or "
                "ROLLBACK through tx.execute), so the block is not all or nothing; let the "
                "block's end commit, and raise to roll back."
            )
        # The door: the Store's durability applies, durability="replicated" included.
        self.file.commit()

    def _conn(self) -> apsw.Connection:
        if not self._open:
            raise TransactionClosedError(
                "this transaction has ended (its block committed or rolled back); write "
                "inside the `with store.transaction() as tx:` block, or open a new one."
            )
        return self.file.conn

    def _guarded(self, work: Callable[..., _Result], *args: Any) -> _Result:
        """``work(conn, *args)`` under a savepoint: if it raises, what it wrote is undone
        and the transaction goes on as before the call."""
        with savepoint(self._conn()) as conn:
            return work(conn, *args)

    # -- the caller's SQL --------------------------------------------------------------
    def execute(self, sql: str, params: Any = ()) -> apsw.Cursor:
        """Run ``sql`` with ``params`` (bound, never spliced) in this transaction; the cursor.

        For the caller's own tables; SQLite's errors for it come as apsw raises them.
        """
        return self._conn().execute(sql, params)

    # -- topics and consumers ----------------------------------------------------------
    def publish(
        self, topic: str, value: Any, *, key: str | bytes | None = None,
        headers: Mapping[str, str] | None = None, timestamp_ms: int | None = None,
    ) -> int | Quarantined:
        """:meth:`Store.publish` in this transaction: its offset, visible at the commit (or
        its Quarantined answer)."""
        return self._one.publish_in(self._conn(), topic, value, key, headers, timestamp_ms)

    def publish_many(self, topic: str, items: Iterable[Any]) -> range:
        """:meth:`Store.publish_many` in this transaction: the offsets, visible at the commit."""
        return self._guarded(topic_log.append, topic, items)

    def commit_offsets(
        self, consumer: str, offsets: Mapping[str, int], *, reset: bool = False
    ) -> dict[str, int]:
        """:meth:`Store.commit_offsets` in this transaction (never back unless ``reset``)."""
        return self._guarded(_commit_offsets, consumer, offsets, reset)

    def committed_offsets(self, consumer: str) -> dict[str, int]:
        """``consumer``'s saved next-offsets as this transaction sees them."""
        return consumer_offsets.committed(self._conn(), consumer)

    def read(
        self, topic: str, start: int = 0, end: int | None = None, limit: int | None = None
    ) -> list[Event]:
        """:meth:`Store.read` as this transaction sees the topic (the consume loop's read)."""
        return topic_reads.read(self._conn(), topic, start, end, limit)

    # -- queues ------------------------------------------------------------------------
    def enqueue(
        self, queue: str, payload: Any, *, wait_ms: int | None = 0,
        **options: Unpack[JobOptions],
    ) -> int:
        """:meth:`Queue.enqueue` in this transaction: the job's id (a duplicate
        ``idempotency_key``: the original's), claimable from the commit on.

        A full queue raises :class:`~spark_queue.errors.QueueFullError` at once: workers
        cannot make room while this transaction holds the write lock, so ``wait_ms`` must
        be 0.
        """
        _no_wait(wait_ms)
        job = NewJob(payload, **options)
        return self._guarded(queue_jobs.enqueue_rows, queue, [job])[0]

    def enqueue_many(
        self, queue: str, jobs: Iterable[NewJob | Any], *, wait_ms: int | None = 0
    ) -> list[int]:
        """:meth:`Queue.enqueue_many` in this transaction: the jobs' ids."""
        _no_wait(wait_ms)
        return self._guarded(queue_jobs.enqueue_rows, queue, list(jobs))

    def ack(self, queue: str, job: Lease) -> None:
        """:meth:`Queue.ack` in this transaction: the job is done when (and only if) the
        transaction commits. A stale lease raises StaleLeaseError: leave the block with it
        and nothing the block wrote is committed (fencing)."""
        if self.ack_many(queue, [job]).rejected:
            job_id = job[0]
            raise StaleLeaseError(
                f"cannot ack job {job_id} of queue {queue!r} in this transaction: its lease "
                "token is stale (the lease expired and another worker claimed it, or it was "
                "acked, released or removed). Let the error leave the block: the "
                "transaction rolls back and its writes are not committed."
            )

    def ack_many(self, queue: str, jobs: Iterable[Lease]) -> LeaseResult:
        """:meth:`Queue.ack_many` in this transaction; stale leases listed in ``rejected``."""
        return self._guarded(leases.ack, queue, list(jobs))


def _commit_offsets(
    conn: apsw.Connection, consumer: str, offsets: Mapping[str, int], reset: bool
) -> dict[str, int]:
    return consumer_offsets.commit(conn, consumer, offsets, reset=reset)


def _no_wait(wait_ms: int | None) -> None:
    if wait_ms != 0:
        raise QueueConfigError(
            f"wait_ms must be 0 inside a transaction; got {wait_ms!r}: workers cannot make "
            "room in a full queue while the transaction holds the write lock. Enqueue "
            "after the block to wait, or raise the queue's max_size."
        )
