"""One producer batch: its calls written in ONE transaction, then every call answered.

A call is ``(kind, name, row, reply)``: ``row`` is an event in its stored
form ``(value, value_type, key, headers)`` or a checked :class:`NewJob`, both
made in the calling thread (see :mod:`spark_queue.store.producer`); ``reply``
is a Future or anything with ``set_result``/``set_exception``.

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

import copy
from collections.abc import Callable, Sequence
from typing import Any

import apsw

from spark_queue.errors import PayloadTooLargeError, QueueFullError
from spark_queue.store.file.connection import StoreConnection, now_ms
from spark_queue.store.file.payload_limits import check_sizes, topic_fix
from spark_queue.store.queues import queue_jobs
from spark_queue.store.streams import event_log, topic_log

EVENT, JOB = 0, 1


def write_batch(db: StoreConnection, batch: list[tuple]) -> bool:
    """Write ``batch`` in one ``BEGIN IMMEDIATE`` transaction and answer each call.

    Returns whether the transaction committed. Never raises: every error
    reaches the callers through their replies.
    """
    results: list[tuple[Any, Any]] = []
    try:
        with db.write() as conn:
            _write_grouped(conn, batch, results)
    except BaseException as exc:  # noqa: BLE001 - every caller must hear of it
        for call in batch:
            settle(call[3], exc)
        return False
    for reply, result in results:
        settle(reply, result)
    return True


def _write_grouped(conn: apsw.Connection, batch: list[tuple], results: list) -> None:
    """Each topic's and each queue's calls together, in the open transaction."""
    events: dict[str, list[tuple]] = {}
    jobs: dict[str, list[tuple]] = {}
    for call in batch:
        (events if call[0] == EVENT else jobs).setdefault(call[1], []).append(call)
    ts_ms = now_ms()
    for topic, calls in events.items():
        _append(conn, topic, calls, ts_ms, results)
    for queue, calls in jobs.items():
        _enqueue(conn, queue, calls, results)


def _append(
    conn: apsw.Connection, topic: str, calls: list[tuple], ts_ms: int, results: list
) -> None:
    log = event_log.open_log(conn, topic)
    first = log.next_offset
    if log.limit is not None:  # each call over it refused alone, before anything is written
        calls = _within_limit(calls, log.limit, topic, results)
    topic_log.insert_stored(conn, log, ts_ms, [call[2] for call in calls])
    results.extend(zip([call[3] for call in calls], range(first, first + len(calls)),
                       strict=True))


def _within_limit(calls: list[tuple], limit: int, topic: str, results: list) -> list[tuple]:
    """The calls whose payload fits ``limit``; the others are answered PayloadTooLargeError."""
    kept = []
    for call in calls:
        try:
            check_sizes((call[2][0],), limit, f"topic {topic!r}", topic_fix(topic))
        except PayloadTooLargeError as exc:
            results.append((call[3], exc))
        else:
            kept.append(call)
    return kept


# What a queue refuses for one call's sake: its max_payload_bytes or max_size.
_REFUSALS = (PayloadTooLargeError, QueueFullError)


def _enqueue(conn: apsw.Connection, queue: str, calls: list[tuple], results: list) -> None:
    """The queue's calls together; if the queue refuses that, each alone, in call order,
    so only the refused calls fail, as if each had been sent on its own."""
    def write(group: list[tuple]) -> Sequence[int]:
        return queue_jobs.enqueue_rows(conn, queue, [call[2] for call in group])

    try:
        results.extend(zip([call[3] for call in calls], _undone_if_refused(conn, write, calls),
                           strict=True))
        return
    except _REFUSALS:
        pass
    for call in calls:
        try:
            results.append((call[3], _undone_if_refused(conn, write, [call])[0]))
        except _REFUSALS as exc:
            results.append((call[3], exc))


def _undone_if_refused(
    conn: apsw.Connection, write: Callable[[list[tuple]], Sequence[int]], calls: list[tuple]
) -> Sequence[int]:
    """``write(calls)`` in a savepoint that a refusal rolls back. Any other error
    leaves the savepoint to the batch's ROLLBACK (SQLite may have ended the
    transaction already, on a full disk)."""
    conn.execute("SAVEPOINT sq_producer_group")
    try:
        written = write(calls)
    except _REFUSALS:
        conn.execute("ROLLBACK TO sq_producer_group")
        conn.execute("RELEASE sq_producer_group")
        raise
    conn.execute("RELEASE sq_producer_group")
    return written


def settle(reply: Any, result: Any) -> None:
    """Answer one call with its offset or job id, or with the error that failed it."""
    if isinstance(result, BaseException):
        # Each caller raises a copy: threads raising one instance would splice
        # their tracebacks into it. The copy's cause is the writer's original.
        try:
            twin = copy.copy(result)
        except Exception:  # noqa: BLE001 - an exception type that cannot be copied
            twin = result
        else:
            twin.__cause__ = result
        reply.set_exception(twin)
    else:
        reply.set_result(result)
