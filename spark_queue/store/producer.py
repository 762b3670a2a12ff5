"""A thread-safe producer with group commit: many calling threads, few transactions.

A :class:`~spark_queue.store.Store` belongs to one thread and each ``publish``
is a transaction of its own, so a service whose request threads each publish
one event pays a whole SQLite commit per event. A :class:`Producer` may be
called from any number of threads and writes the calls waiting together in
ONE ``BEGIN IMMEDIATE`` transaction on a connection of its own
(:mod:`~spark_queue.store.producer_batch`); each caller gets its offset or job
id after that COMMIT.

- Who writes (leader/follower): a blocking call that finds no write under
  way leads: it takes every call waiting (its own included, up to
  ``max_batch``), writes them, and answers them. Calls that arrive meanwhile
  wait, and when the batch is answered the first blocking one among them is
  handed the lead for the next. A leader needs no thread wake-up and a
  follower one (a lock the leader releases), where a dedicated writer thread
  would cost every call two. ``*_nowait`` calls never write in the caller's
  thread: when no one leads, the producer's own writer thread does.
- Batching: calls that arrive while a batch commits join the next one, so
  batches grow with load even at ``linger_ms=0``. With ``linger_ms > 0`` the
  leader also waits until the oldest waiting call is that old (or
  ``max_batch`` calls wait, or a flush or close asks) before it begins; and
  after a batch that held N blocking calls, only until N more calls arrived:
  threads that publish in a loop call again at once, so the next batch has
  them all, and a thread that does not call again costs at most the linger.
  The default is 1 ms: at 0 the caller just answered finds no write under
  way and writes a batch of one while the others are still waking, and 8
  blocking threads ran slower than one thread with a Store (0.8x, bench
  store); Kafka 4.0 moved its producer's ``linger.ms`` default from 0 to 5 ms
  (KIP-1030) for the same reason.
- Durable on return: ``publish``/``enqueue`` return, and the futures of
  ``publish_nowait``/``enqueue_nowait`` resolve, only after the commit.
- A bad payload, key, header, name or job option raises in the calling
  thread before the call joins a batch, so it cannot fail its neighbours;
  the value is encoded then, and later changes to it are not seen.
- A batch that fails in SQLite fails every call in it and writes nothing;
  only the limits kept in the file (``max_payload_bytes``, a queue's
  ``max_size``) fail one call alone (see :mod:`~spark_queue.store.producer_batch`).
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
from typing import Any

from spark_queue import defaults
from spark_queue.errors import StoreError
from spark_queue.store import housekeeping
from spark_queue.store.file.arguments import check_int, check_optional_int
from spark_queue.store.producer_batch import EVENT, JOB, BatchWriter, event_call, new_job
from spark_queue.store.producer_replies import Ack, Reply, answer_unanswered
from spark_queue.store.store import Store

_get_ident = threading.get_ident
_MAX_WAIT_MS = defaults.MAX_WAIT_MS


class Producer:
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
        self._linger_s = linger_ms / 1000
        self._max_batch = max_batch
        self._max_pending = max_pending
        # Opened here so a missing or foreign file fails in the caller.
        self._store = Store(
            path, create=create, durability=durability, busy_timeout_ms=busy_timeout_ms
        )
        self.path = self._store.path
        # Every Ack of this producer waits on one Condition (see producer_replies).
        self._batches = BatchWriter(self._store.file, threading.Condition())
        self._named: set[str] = set()  # topic names validated already (see event_call)
        self._lock = threading.Lock()
        self._writer_wanted = threading.Condition(self._lock)
        self._linger_cut = threading.Condition(self._lock)
        self._has_room = threading.Condition(self._lock)
        self._progress = threading.Condition(self._lock)
        # With a linger: how many more calls the next batch waits for (as many
        # as the last batch held blocking calls: their threads tend to call
        # again at once); -1 when it held none (the linger runs out).
        self._awaited = -1
        self._pending: list[tuple] = []
        self._oldest_at = 0.0  # monotonic arrival of the oldest waiting call
        # The lead: held by the thread writing (or handed a batch to write)
        # whenever calls wait, so a waiting call always has a writer coming.
        self._leading = False
        self._writer_leads = False  # the lead was handed to the writer thread
        self._writing_in = 0  # ident of the thread writing a batch now, else 0
        self._flushing = 0
        self._closed = False
        self._stopping = False
        self._sent = 0
        #: Calls written or failed so far, and the transactions that held them.
        self.calls_done = 0
        self.batches_committed = 0
        self._writer = threading.Thread(
            target=self._standby, name="spark_queue-producer", daemon=True
        )
        self._writer.start()
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
        self._submit(event_call(topic, value, key, headers, future, self._named), future)
        return future

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
        job = new_job(queue, payload, priority, delay_ms, ttl_ms, idempotency_key, max_attempts)
        reply = Reply()
        return self._call((JOB, queue, reply, job), reply)

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
        job = new_job(queue, payload, priority, delay_ms, ttl_ms, idempotency_key, max_attempts)
        future = Ack(self._batches.answered)
        self._submit((JOB, queue, future, job), future)
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

    def _submit(self, call: tuple, reply: Reply | Ack) -> None:
        """Queue the call; a blocking call that finds no one leading takes the lead."""
        with self._lock:
            if self._writing_in == _get_ident():
                # A done-callback of a batch this thread writes: only this
                # thread makes room, and a blocking call would wait for itself.
                if type(reply) is Reply:
                    raise _waits_for_itself("publish" if call[0] == EVENT else "enqueue")
            else:
                while len(self._pending) >= self._max_pending and not self._closed:
                    self._has_room.wait()
            pending = self._pending  # taking a batch may have replaced the list
            if self._closed:
                raise StoreError(
                    f"producer for {self.path!r} is closed; open a new Producer to write."
                )
            pending.append(call)
            self._sent += 1
            if self._linger_s and (
                len(pending) == 1 or self._awaited > 0 or len(pending) == self._max_batch
            ):
                self._arrived(len(pending))
            if self._leading:
                return
            if type(reply) is Reply:
                self._leading = reply.leads = True  # the lead, with no wake-up
            else:
                self._leading = self._writer_leads = True
                self._writer_wanted.notify()

    def _arrived(self, waiting: int) -> None:
        """Linger bookkeeping for a call just queued (the caller holds the lock)."""
        if waiting == 1:
            self._oldest_at = time.monotonic()
        if self._awaited > 0:
            self._awaited -= 1
            if self._awaited == 0:
                self._linger_cut.notify()
        if waiting == self._max_batch:
            self._linger_cut.notify()

    def _call(self, call: tuple, reply: Reply) -> int:
        """A blocking call: queue it, write batches if handed the lead, wait for the answer."""
        try:
            self._submit(call, reply)
            if not reply.leads:
                reply.wake.acquire()
            if reply.leads:
                reply.leads = False
                self._lead()  # its first batch holds this call
                reply.wake.acquire()
        except BaseException:
            self._abandon(reply)
            raise
        if reply.error is not None:
            raise reply.error
        return reply.value

    def _abandon(self, reply: Reply) -> None:
        """An interrupted caller gives up waiting: it must not keep (or be handed) the lead."""
        with self._lock:
            reply.abandoned = True
            if reply.leads:
                reply.leads = False
                # Handed the lead (the interrupt may have passed it straight
                # back to this call, first in line): take back the release
                # that handed it over, or answering the call later would
                # release an unlocked lock in the writing thread.
                reply.wake.acquire(False)
                self._pass_lead()

    def _not_while_writing(self, method: str) -> None:
        if self._writing_in == _get_ident():
            raise _waits_for_itself(method)

    # -- the lead -------------------------------------------------------------
    def _lead(self) -> None:
        """Write batches while this thread holds the lead, then pass it on or drop it."""
        me = _get_ident()
        with self._lock:
            try:
                while True:
                    batch = self._take()
                    self._writing_in = me
                    self._lock.release()
                    committed = False
                    try:
                        committed = self._batches.write(batch)
                    finally:
                        self._lock.acquire()
                        self._writing_in = 0
                        self._done(batch, committed)
                    if not self._pending:
                        self._leading = False
                        return
                    if self._pass_lead(me):
                        return
            except BaseException:
                # Interrupted (a signal in the main thread): the lead must not stay here.
                if self._pending:
                    self._pass_lead()
                else:
                    self._leading = False
                raise

    def _done(self, batch: list[tuple], committed: bool) -> None:
        """Count a batch written or failed (the caller holds the lock)."""
        if not committed:
            answer_unanswered(batch)
        self.calls_done += len(batch)
        self.batches_committed += committed
        if self._flushing or self._closed:
            self._progress.notify_all()

    def _take(self) -> list[tuple]:
        """The next batch (the caller holds the lock): the oldest calls, up to max_batch."""
        pending = self._pending
        if self._linger_s:
            deadline = self._oldest_at + self._linger_s
            while (
                len(pending) < self._max_batch
                and self._awaited
                and not self._closed
                and not self._flushing
                and (remaining := deadline - time.monotonic()) > 0
            ):
                self._linger_cut.wait(remaining)
            # What is left waited through this batch already: it goes next, no linger.
            self._oldest_at = 0.0
        if len(pending) >= self._max_pending:
            self._has_room.notify_all()
        if len(pending) <= self._max_batch:
            batch, self._pending = pending, []
        else:
            batch = pending[: self._max_batch]
            del pending[: self._max_batch]
        if self._linger_s:
            # Counted from now: a blocking caller cannot call again before
            # this batch answers it.
            self._awaited = sum(type(call[2]) is Reply for call in batch) or -1
        return batch

    def _pass_lead(self, me: int = 0) -> bool:
        """Hand the lead to the first blocking call of the next batch, else to the writer
        thread (the caller holds the lock, and calls wait). False if ``me`` keeps it."""
        for call in self._pending[: self._max_batch]:
            reply = call[2]
            if type(reply) is Reply and not reply.abandoned:
                reply.leads = True
                reply.wake.release()
                return True
        if me == self._writer.ident:
            return False
        self._writer_leads = True
        self._writer_wanted.notify()
        return True

    def _standby(self) -> None:
        """The writer thread: leads when handed the lead (only ``*_nowait`` calls wait)."""
        while True:
            with self._lock:
                while not self._writer_leads:
                    if self._stopping:
                        return
                    self._writer_wanted.wait()
                self._writer_leads = False
            self._lead()


def _waits_for_itself(method: str) -> StoreError:
    return StoreError(
        f"Producer.{method} was called from a future's done-callback, which runs in the "
        "thread writing the producer's batch and would wait for itself; use the _nowait "
        "methods there."
    )
