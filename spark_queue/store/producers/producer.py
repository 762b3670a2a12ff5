"""A thread-safe producer with group commit: many calling threads, few transactions.

A :class:`~spark_queue.store.Store` belongs to one thread and each ``publish``
is a transaction of its own, so a service whose request threads each publish
one event pays a whole SQLite commit per event. A :class:`Producer` may be
called from any number of threads and writes the calls waiting together in
ONE ``BEGIN IMMEDIATE`` transaction on a connection of its own
(:mod:`~spark_queue.store.producers.producer_batch`); each caller gets its offset or job
id after that COMMIT.

- Who writes, and how batches form: :mod:`~spark_queue.store.producers.producer_queue`.
- Durable on return: ``publish``/``enqueue`` return, and the futures of
  ``publish_nowait``/``enqueue_nowait`` resolve, only after the commit.
- A bad payload, key, header, name or job option raises in the calling
  thread before the call joins a batch, so it cannot fail its neighbours;
  the value is encoded then, and later changes to it are not seen.
- A batch that fails in SQLite fails every call in it and writes nothing;
  only the limits kept in the file (``max_payload_bytes``, a queue's
  ``max_size``) fail one call alone (see :mod:`~spark_queue.store.producers.producer_batch`).
- One batch is written at a time, its calls in the order they were made:
  per-thread order holds and offsets stay dense; a SIGKILL leaves all or
  none of the batch in flight.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any, Unpack

from spark_queue import defaults
from spark_queue.errors import StoreError
from spark_queue.job_options import JobOptions
from spark_queue.store.file.arguments import check_int, check_optional_int
from spark_queue.store.file.codec import TEXT, Encoded, encode_headers, encode_key, encode_value
from spark_queue.store.file.names import validate_name
from spark_queue.store.floor import housekeeping
from spark_queue.store.producers.producer_batch import EVENT, JOB, BatchWriter
from spark_queue.store.producers.producer_queue import CallQueue
from spark_queue.store.producers.producer_replies import Ack, Reply
from spark_queue.store.queues import queue_jobs
from spark_queue.store.queues.queue_jobs import NewJob
from spark_queue.store.store import Store

_MAX_WAIT_MS = defaults.MAX_WAIT_MS
_NAMES_KEPT = 1024  # validated topic names a producer remembers (see event_call)


class Producer(CallQueue):
    """Publish and enqueue from any number of threads; calls waiting together commit together.

    >>> with Producer("events.sqlite") as producer:     # doctest: +SKIP
    ...     producer.publish("clicks", {"user": 7})     # from any thread -> offset
    ...     producer.enqueue("emails", {"to": "a@b"})   # -> job id

    The producer opens its own connection to ``path`` (``durability`` and
    ``busy_timeout_ms`` as for :class:`~spark_queue.store.Store`); one batch
    at a time uses it, in whichever thread leads. Like a Store it must not
    cross a fork; open one per process. ``close()`` (or the with-block) waits
    for every call sent and then closes the connection.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        linger_ms: int = 1,
        max_batch: int = 1000,
        max_pending: int = 100_000,
        durability: str = defaults.DURABILITY,
        busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS,
        create: bool = True,
    ) -> None:
        # The linger is a thread's wait, which holds at most threading.TIMEOUT_MAX.
        check_int(linger_ms, "linger_ms", high=_MAX_WAIT_MS, error=StoreError, owner="Producer")
        check_int(max_batch, "max_batch", low=1, error=StoreError, owner="Producer")
        check_int(max_pending, "max_pending", low=max_batch, error=StoreError, owner="Producer")
        # Opened here so a missing or foreign file fails in the caller.
        self._store = Store(
            path, create=create, durability=durability, busy_timeout_ms=busy_timeout_ms
        )
        self.path = self._store.path
        # Every Ack of this producer waits on one Condition (see producer_replies).
        self._named: set[str] = set()  # topic names validated already (see event_call)
        super().__init__(
            BatchWriter(self._store.file, threading.Condition()), linger_ms, max_batch, max_pending
        )
        self._keeper = housekeeping.Housekeeper(path, busy_timeout_ms=busy_timeout_ms).start()

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
        reply = Reply()
        return self._call(event_call(topic, value, key, headers, reply, self._named), reply)

    def publish_nowait(
        self,
        topic: str,
        value: Any,
        *,
        key: str | bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Future[int]:
        """Like :meth:`publish`, but return a future of the offset at once."""
        future = Ack(self._batches.answered)
        self._send(event_call(topic, value, key, headers, future, self._named))
        return future

    def enqueue(
        self,
        queue: str,
        payload: Any,
        **options: Unpack[JobOptions],
    ) -> int:
        """Enqueue one job with the next batch; returns its id once committed.

        Options as for :meth:`Queue.enqueue <spark_queue.store.Queue.enqueue>`.
        A queue at its ``max_size`` fails the call with QueueFullError at once.
        """
        job = new_job(queue, payload, options)
        reply = Reply()
        return self._call((JOB, queue, reply, job), reply)

    def enqueue_nowait(
        self,
        queue: str,
        payload: Any,
        **options: Unpack[JobOptions],
    ) -> Future[int]:
        """Like :meth:`enqueue`, but return a future of the job id at once."""
        job = new_job(queue, payload, options)
        future = Ack(self._batches.answered)
        self._send((JOB, queue, future, job))
        return future

    def flush(self, timeout_ms: int | None = None) -> None:
        """Wait until every call sent before this one is committed or failed.

        Cuts the linger short. Raises TimeoutError if ``timeout_ms`` passes first.
        """
        check_optional_int(timeout_ms, "timeout_ms", high=_MAX_WAIT_MS, owner="Producer.flush",
                           none_means="wait as long as it takes")
        self._not_while_writing("flush")
        deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
        with self._lock:
            target = self._sent
            self._flushing += 1
            self._linger_cut.notify_all()
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
        """Write every call sent, stop the writer thread and close the connection; idempotent."""
        self._not_while_writing("close")
        with self._lock:
            self._closed = True
            self._linger_cut.notify_all()
            self._has_room.notify_all()
            while self._leading:
                self._progress.wait()
            self._stopping = True
            self._writer_wanted.notify()
        self._writer.join()
        self._keeper.stop()
        self._store.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Producer({self.path!r})"


# -- calls, made in the calling thread ---------------------------------------------
def event_call(
    topic: str, value: Any, key: Any, headers: Any, reply: Any, named: set[str]
) -> tuple[Any, ...]:
    """The call with its event as stored (see codec), encoded in the calling thread, so a
    bad one raises PayloadError there; ``named`` holds the topic names checked already."""
    if type(topic) is not str or topic not in named:
        validate_name(topic)
        if type(topic) is str:
            if len(named) >= _NAMES_KEPT:
                named.clear()
            named.add(topic)
    if type(value) is str and value.isascii():  # the hot case; other text is checked
        return (EVENT, topic, reply, value, TEXT, encode_key(key), encode_headers(headers))
    stored, value_type = encode_value(value)
    return (EVENT, topic, reply, stored, value_type, encode_key(key), encode_headers(headers))


def new_job(queue: str, payload: Any, options: JobOptions) -> NewJob:
    """The job with its payload encoded, checked in the calling thread like enqueue_rows does."""
    validate_name(queue, "queue")
    job = NewJob(Encoded(*encode_value(payload)), **options)
    queue_jobs.check_job(job)
    return job

