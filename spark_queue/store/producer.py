"""A thread-safe producer with group commit: many calling threads, one writer, few transactions.

A :class:`~spark_queue.store.Store` belongs to one thread and each ``publish``
is a transaction of its own, so a service whose request threads each publish
one event pays a whole SQLite commit per event. A :class:`Producer` may be
called from any number of threads. One writer thread, on a connection of its
own, takes every call waiting for it (up to ``max_batch``) and writes them in
ONE ``BEGIN IMMEDIATE`` transaction through the store's own append and
enqueue code; each caller gets its offset or job id after that COMMIT.

- Batching: calls that arrive while a batch commits join the next one, so
  batches grow with load even at ``linger_ms=0``. With ``linger_ms > 0`` the
  writer also waits until the oldest waiting call is that old (or
  ``max_batch`` calls wait, or a flush or close asks) before it begins.
- Durable on return: ``publish``/``enqueue`` return, and the futures of
  ``publish_nowait``/``enqueue_nowait`` resolve, only after the commit.
- A bad payload, key, header, name or job option raises in the calling
  thread before the call joins a batch, so it cannot fail its neighbours;
  the value is encoded then, and later changes to it are not seen.
- A batch that fails in SQLite (disk full, busy timeout, a damaged file)
  fails every call in it with that error and writes nothing. Only the limits
  kept in the file are per call: a payload over its topic's or queue's
  ``max_payload_bytes`` (PayloadTooLargeError) or a call that does not fit a
  queue's ``max_size`` (QueueFullError) fails alone.
- Calls are written in the order they were made: per-thread order holds and
  offsets stay dense; a SIGKILL leaves all or none of the batch in flight.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from functools import partial
from typing import Any

from spark_queue.errors import PayloadTooLargeError, QueueFullError, StoreError
from spark_queue.store import queues, topics
from spark_queue.store.codec import TEXT, Encoded, encode_headers, encode_key, encode_value
from spark_queue.store.connection import DEFAULT_BUSY_TIMEOUT_MS
from spark_queue.store.core import Store
from spark_queue.store.names import validate_name
from spark_queue.store.queues import NewJob
from spark_queue.store.topics import EncodedChunk

_EVENT, _JOB = 0, 1


class Producer:
    """Publish and enqueue from any number of threads; one writer commits them in batches.

    >>> with Producer("events.sqlite") as producer:     # doctest: +SKIP
    ...     producer.publish("clicks", {"user": 7})     # from any thread -> offset
    ...     producer.enqueue("emails", {"to": "a@b"})   # -> job id

    The producer opens its own connection to ``path`` (``durability`` and
    ``busy_timeout_ms`` as for :class:`~spark_queue.store.Store`). Like a
    Store it must not cross a fork; open one per process. ``close()`` (or the
    with-block) waits for every call sent and then closes the connection.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        linger_ms: int = 0,
        max_batch: int = 1000,
        max_pending: int = 100_000,
        durability: str = "normal",
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
        create: bool = True,
    ) -> None:
        _check_setting("linger_ms", linger_ms, 0)
        _check_setting("max_batch", max_batch, 1)
        _check_setting("max_pending", max_pending, max_batch)
        self._linger_s = linger_ms / 1000
        self._max_batch = max_batch
        self._max_pending = max_pending
        # Opened here so a missing or foreign file fails in the caller; from
        # now on only the writer thread uses this connection.
        self._store = Store(
            path, create=create, durability=durability, busy_timeout_ms=busy_timeout_ms
        )
        self.path = self._store.path
        self._lock = threading.Lock()
        self._has_work = threading.Condition(self._lock)
        self._has_room = threading.Condition(self._lock)
        self._progress = threading.Condition(self._lock)
        self._pending: list[tuple] = []
        self._oldest_at = 0.0  # monotonic arrival of the oldest waiting call
        self._flushing = 0
        self._closed = False
        self._sent = 0
        #: Calls written or failed so far, and the transactions that held them.
        self.calls_done = 0
        self.batches_committed = 0
        self._writer = threading.Thread(target=self._run, name="spark_queue-producer", daemon=True)
        self._writer.start()

    # -- calls from any thread ----------------------------------------------
    def publish(
        self,
        topic: str,
        value: Any,
        *,
        key: str | bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> int:
        """Append one event with the next batch; returns its offset once committed."""
        self._not_from_writer("publish")
        row = _event_row(topic, value, key, headers)
        return self._submit(_EVENT, topic, row, _Reply()).result()

    def publish_nowait(
        self,
        topic: str,
        value: Any,
        *,
        key: str | bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Future[int]:
        """Like :meth:`publish`, but return a future of the offset at once."""
        return self._submit(_EVENT, topic, _event_row(topic, value, key, headers), Future())

    def enqueue(
        self,
        queue: str,
        payload: Any,
        *,
        priority: int = 0,
        delay_ms: int = 0,
        ttl_ms: int | None = None,
        idempotency_key: str | None = None,
        max_attempts: int | None = None,
    ) -> int:
        """Enqueue one job with the next batch; returns its id once committed.

        Options as for :meth:`Queue.enqueue <spark_queue.store.Queue.enqueue>`.
        A queue at its ``max_size`` fails the call with QueueFullError at once.
        """
        self._not_from_writer("enqueue")
        job = _job(queue, payload, priority, delay_ms, ttl_ms, idempotency_key, max_attempts)
        return self._submit(_JOB, queue, job, _Reply()).result()

    def enqueue_nowait(
        self,
        queue: str,
        payload: Any,
        *,
        priority: int = 0,
        delay_ms: int = 0,
        ttl_ms: int | None = None,
        idempotency_key: str | None = None,
        max_attempts: int | None = None,
    ) -> Future[int]:
        """Like :meth:`enqueue`, but return a future of the job id at once."""
        job = _job(queue, payload, priority, delay_ms, ttl_ms, idempotency_key, max_attempts)
        return self._submit(_JOB, queue, job, Future())

    def flush(self, timeout_ms: int | None = None) -> None:
        """Wait until every call sent before this one is committed or failed.

        Cuts the linger short. Raises TimeoutError if ``timeout_ms`` passes first.
        """
        self._not_from_writer("flush")
        deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
        with self._lock:
            target = self._sent
            self._flushing += 1
            self._has_work.notify()
            try:
                while self.calls_done < target:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise TimeoutError(
                            f"producer for {self.path!r}: {target - self.calls_done} calls "
                            f"still unwritten after flush(timeout_ms={timeout_ms})."
                        )
                    self._progress.wait(remaining)
            finally:
                self._flushing -= 1

    def close(self) -> None:
        """Write every call sent, stop the writer and close its connection; idempotent."""
        self._not_from_writer("close")
        with self._lock:
            self._closed = True
            self._has_work.notify()
            self._has_room.notify_all()
        self._writer.join()
        self._store.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Producer({self.path!r})"

    def _submit(self, kind: int, name: str, row: Any, reply: _Reply | Future[int]) -> Any:
        with self._lock:
            while len(self._pending) >= self._max_pending and not self._closed:
                if threading.current_thread() is self._writer:
                    break  # a done-callback: only this thread makes room
                self._has_room.wait()
            if self._closed:
                raise StoreError(
                    f"producer for {self.path!r} is closed; open a new Producer to write."
                )
            pending = self._pending
            pending.append((kind, name, row, reply))
            self._sent += 1
            # Wake the writer only when it may be waiting: for a first call,
            # or, while it lingers, for a full batch.
            if len(pending) == 1:
                self._oldest_at = time.monotonic()
                self._has_work.notify()
            elif len(pending) == self._max_batch:
                self._has_work.notify()
        return reply

    def _not_from_writer(self, method: str) -> None:
        if threading.current_thread() is self._writer:
            raise StoreError(
                f"Producer.{method} was called from the producer's writer thread (a future's "
                "done-callback), which would wait for itself; use the _nowait methods there."
            )

    # -- the writer thread ----------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._lock:
                batch = self._take()
            if batch is None:
                return
            self._write(batch)
            with self._lock:
                self.calls_done += len(batch)
                if self._flushing:
                    self._progress.notify_all()

    def _take(self) -> list[tuple] | None:
        """The next batch (the caller holds the lock), or None once closed and drained."""
        while not self._pending:
            if self._closed:
                return None
            self._has_work.wait()
        if self._linger_s:
            deadline = self._oldest_at + self._linger_s
            while (
                len(self._pending) < self._max_batch
                and not self._closed
                and not self._flushing
                and (remaining := deadline - time.monotonic()) > 0
            ):
                self._has_work.wait(remaining)
        batch = self._pending[: self._max_batch]
        del self._pending[: self._max_batch]
        # What is left waited through this batch already: it goes next, no linger.
        self._oldest_at = 0.0
        self._has_room.notify_all()
        return batch

    def _write(self, batch: list[tuple]) -> None:
        events: dict[str, list[tuple]] = {}
        jobs: dict[str, list[tuple]] = {}
        for call in batch:
            (events if call[0] == _EVENT else jobs).setdefault(call[1], []).append(call)
        results: list[tuple[Future[int], Any]] = []
        try:
            with self._store.write() as conn:
                for topic, calls in events.items():
                    results += _write_group(conn, calls, partial(_append, conn, topic))
                for queue, calls in jobs.items():
                    results += _write_group(conn, calls, partial(_enqueue, conn, queue))
        except BaseException as exc:  # noqa: BLE001 - every caller must hear of it
            for call in batch:
                _settle(call[3], exc)
            return
        self.batches_committed += 1
        for future, result in results:
            _settle(future, result)


def _event_row(topic: str, value: Any, key: Any, headers: Any) -> tuple:
    """The event as stored (see codec), encoded in the calling thread; raises PayloadError."""
    validate_name(topic)
    if type(value) is str:
        return (value, TEXT, encode_key(key), encode_headers(headers))
    stored, value_type = encode_value(value)
    return (stored, value_type, encode_key(key), encode_headers(headers))


def _job(
    queue: str,
    payload: Any,
    priority: int,
    delay_ms: int,
    ttl_ms: int | None,
    idempotency_key: str | None,
    max_attempts: int | None,
) -> NewJob:
    """The job with its payload encoded, checked in the calling thread like enqueue_rows does."""
    validate_name(queue, "queue")
    job = NewJob(Encoded(*encode_value(payload)), priority, delay_ms, idempotency_key,
                 max_attempts, ttl_ms)
    queues.check_job(job)
    return job


class _Reply:
    """A blocking caller's answer slot: lighter than a Future (no Condition, no callbacks)."""

    __slots__ = ("_done", "_value", "_error")

    def __init__(self) -> None:
        self._done = threading.Lock()
        self._done.acquire()
        self._error: BaseException | None = None

    def set_result(self, value: int) -> None:
        self._value = value
        self._done.release()

    def set_exception(self, error: BaseException) -> None:
        self._error = error
        self._done.release()

    def result(self) -> int:
        self._done.acquire()
        if self._error is not None:
            raise self._error
        return self._value


def _chunks(calls: list[tuple]) -> Iterator[EncodedChunk]:
    """The calls' rows as EncodedChunks, one per run of calls with the same value type."""
    start = 0
    for end in range(1, len(calls) + 1):
        if end == len(calls) or calls[end][2][1] != calls[start][2][1]:
            rows = [call[2] for call in calls[start:end]]
            yield EncodedChunk(
                [row[0] for row in rows],
                rows[0][1],
                [row[2] for row in rows],
                [row[3] for row in rows],
            )
            start = end


def _append(conn: Any, topic: str, calls: list[tuple]) -> range:
    return topics.append_encoded(conn, topic, _chunks(calls))


def _enqueue(conn: Any, queue: str, calls: list[tuple]) -> list[int]:
    return queues.enqueue_rows(conn, queue, [call[2] for call in calls])


# What a topic or queue refuses for one call's sake: its max_payload_bytes
# (the limit lives in the file, so only the writer can check it) or max_size.
_REFUSALS = (PayloadTooLargeError, QueueFullError)


def _write_group(
    conn: Any, calls: list[tuple], write: Callable[[list[tuple]], Sequence[int]]
) -> list[tuple[Any, Any]]:
    """(reply, offset or job id) for ``calls`` to one topic or queue, written together.

    If the destination refuses one of them, the group is undone (a savepoint)
    and each call is written alone, in call order, so only the refused calls
    fail, as if each had been sent on its own.
    """
    try:
        return list(zip([call[3] for call in calls], _undone_if_refused(conn, write, calls),
                        strict=True))
    except _REFUSALS:
        pass
    results: list[tuple[Any, Any]] = []
    for call in calls:
        try:
            results.append((call[3], _undone_if_refused(conn, write, [call])[0]))
        except _REFUSALS as exc:
            results.append((call[3], exc))
    return results


def _undone_if_refused(
    conn: Any, write: Callable[[list[tuple]], Sequence[int]], calls: list[tuple]
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


def _settle(future: _Reply | Future[int], result: Any) -> None:
    if isinstance(result, BaseException):
        # Each caller raises a copy: threads raising one instance would splice
        # their tracebacks into it. The copy's cause is the writer's original.
        try:
            twin = copy.copy(result)
        except Exception:  # noqa: BLE001 - an exception type that cannot be copied
            twin = result
        else:
            twin.__cause__ = result
        future.set_exception(twin)
    else:
        future.set_result(result)


def _check_setting(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise StoreError(f"Producer {name} must be an integer >= {low}; got {value!r}.")
