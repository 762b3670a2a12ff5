"""One producer batch: its calls written in ONE transaction, then every call answered.

A call is one flat tuple, made in the calling thread by the Producer
(:func:`~spark_queue.store.producers.producer.event_call`,
:func:`~spark_queue.store.producers.producer.new_job`: a bad one raises there): an event
``(EVENT, topic, reply, value, value_type, key, headers)`` in its stored form, a job
``(JOB, queue, reply, job)`` with a checked :class:`NewJob`. One tuple, not a call holding a row:
calls in flight are what the garbage collector walks, and a topic's calls
turn into the columns :func:`~spark_queue.store.streams.event_log.write_events`
stores with one transpose. ``reply`` is an
:class:`~spark_queue.store.producers.producer_replies.Ack`, a
:class:`~spark_queue.store.producers.producer_replies.Reply`, or anything with
``set_result``/``set_exception``.

- A failure in SQLite (disk full, busy timeout, damage) rolls the whole
  transaction back and answers every call in the batch with that error.
- Only the limits kept in the file refuse one call alone: a payload over its
  topic's ``max_payload_bytes`` is found before anything is inserted (the
  limit is read in the same transaction), so the topic path needs no
  savepoint; a queue's ``max_payload_bytes`` or ``max_size`` refuses inside
  :func:`~spark_queue.store.queues.queue_jobs.enqueue_rows`, so each queue's calls are
  written in a savepoint and, if refused, again one by one.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import apsw

from spark_queue.errors import PayloadTooLargeError, QueueFullError
from spark_queue.store.file.connection import StoreConnection, now_ms, savepoint
from spark_queue.store.file.payload_limits import check_sizes, topic_fix
from spark_queue.store.producers.producer_replies import settle_all
from spark_queue.store.queues import queue_jobs
from spark_queue.store.streams import event_log

EVENT, JOB = 0, 1
#: A call: one flat tuple of an event's or a job's fields (their types per kind, above).
Call = tuple[Any, ...]
#: Per call written or refused, its (reply, result or error); settled after the commit.
Results = list[Iterable[tuple[Any, Any]]]
_KIND, _NAME = operator.itemgetter(0), operator.itemgetter(1)


class BatchWriter:
    """Writes a producer's batches on its connection ``db``; ``answered`` is the
    Condition the producer's Acks share.

    Like ``Store.publish`` (:mod:`~spark_queue.store.streams.publish_one`), it
    keeps each topic's log from the last batch and trusts it while the file's
    data version is the one our last commit left: a batch of a few blocking
    calls then costs BEGIN, INSERT, UPDATE, COMMIT, not the topic's row read
    again (a fifth of its time). Any other write since, ours or another
    client's, and the row is read again.
    """

    __slots__ = ("db", "answered", "_logs", "_version")

    def __init__(self, db: StoreConnection, answered: threading.Condition) -> None:
        self.db = db
        self.answered = answered
        self._logs: dict[str, event_log.TopicLog] = {}  # by topic name, as of ``_version``
        self._version = -1  # the file's data version after our last commit; -1: none yet

    def write(self, batch: list[Call]) -> bool:
        """Write ``batch`` in one ``BEGIN IMMEDIATE`` transaction and answer each call.

        Returns whether the transaction committed. Never raises: every error
        reaches the callers through their replies.
        """
        # Iterables of (reply, offset, job id or error): a topic's run is one lazy zip,
        # not a tuple per call for the collector to walk.
        results: Results = []
        try:
            self.db.transact(self._write_grouped, batch, results)
        except BaseException as exc:  # noqa: BLE001 - every caller must hear of it
            self._logs.clear()  # rolled back: what it did to a kept log never happened
            settle_all(self.answered, [(call[2], exc) for call in batch])
            return False
        self._version = self.db.conn.data_version()
        settle_all(self.answered, itertools.chain.from_iterable(results))
        return True

    def _write_grouped(self, conn: apsw.Connection, batch: list[Call], results: Results) -> None:
        """Each topic's and each queue's calls together, in the open transaction."""
        if conn.data_version() != self._version:
            self._logs.clear()
        events: dict[str, list[Call]] = {}
        jobs: dict[str, list[Call]] = {}
        if len(set(map(_KIND, batch))) == 1 and len(set(map(_NAME, batch))) == 1:
            # One topic or queue (the usual batch): two passes in C, no loop per call.
            (events if batch[0][0] == EVENT else jobs)[batch[0][1]] = batch
        else:
            for call in batch:
                (events if call[0] == EVENT else jobs).setdefault(call[1], []).append(call)
        ts_ms = now_ms()
        for topic, calls in events.items():
            log = self._logs.get(topic)
            if log is None:
                log = self._logs[topic] = event_log.open_log(conn, topic)
            _append(conn, log, calls, ts_ms, results)
        for queue, calls in jobs.items():
            _enqueue(conn, queue, calls, results)


def _append(
    conn: apsw.Connection, log: event_log.TopicLog, calls: list[Call], ts_ms: int,
    results: Results,
) -> None:
    first = log.next_offset
    if log.limit is not None:  # each call over it refused alone, before anything is written
        calls = _within_limit(calls, log.limit, log.name, results)
        if not calls:
            return
    _, _, replies, values, vtypes, keys, headers = zip(*calls, strict=True)
    event_log.write_columns(conn, log, ts_ms, values, vtypes, keys, headers)
    results.append(zip(replies, range(first, first + len(calls)), strict=True))


def _within_limit(calls: list[Call], limit: int, topic: str, results: Results) -> list[Call]:
    """The calls whose payload fits ``limit``; the others are answered PayloadTooLargeError."""
    kept = []
    for call in calls:
        try:
            check_sizes((call[3],), limit, f"topic {topic!r}", topic_fix(topic))
        except PayloadTooLargeError as exc:
            results.append(((call[2], exc),))
        else:
            kept.append(call)
    return kept


# What a queue refuses for one call's sake: its max_payload_bytes or max_size.
_REFUSALS = (PayloadTooLargeError, QueueFullError)


def _enqueue(conn: apsw.Connection, queue: str, calls: list[Call], results: Results) -> None:
    """The queue's calls together; if the queue refuses that, each alone, in call order,
    so only the refused calls fail, as if each had been sent on its own."""
    def write(group: list[Call]) -> Sequence[int]:
        return queue_jobs.enqueue_rows(conn, queue, [call[3] for call in group])

    try:
        results.append(zip([call[2] for call in calls], _undone_if_refused(conn, write, calls),
                           strict=True))
        return
    except _REFUSALS:
        pass
    for call in calls:
        try:
            results.append(((call[2], _undone_if_refused(conn, write, [call])[0]),))
        except _REFUSALS as exc:
            results.append(((call[2], exc),))


def _undone_if_refused(
    conn: apsw.Connection, write: Callable[[list[Call]], Sequence[int]], calls: list[Call]
) -> Sequence[int]:
    """``write(calls)`` in a savepoint that a refusal rolls back. Any other error
    leaves the savepoint to the batch's ROLLBACK (SQLite may have ended the
    transaction already, on a full disk)."""
    with savepoint(conn, undo=_REFUSALS):
        return write(calls)
