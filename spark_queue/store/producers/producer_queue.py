"""The calls a producer has waiting, and which thread writes them.

:class:`~spark_queue.store.producers.producer.Producer` builds on :class:`CallQueue`:
the producer checks and shapes each call, the queue decides who writes the
next batch and when (:class:`~spark_queue.store.producers.producer_batch.BatchWriter`
writes it).

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
- ``*_nowait`` calls queue without the lock while a writer leads
  (:meth:`CallQueue._send`): eight threads taking one lock per call spent
  more time handing it, and the GIL, between them than the writer spent
  writing (bench store, threads section).
- One batch is written at a time, its calls in the order they were queued.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque

from spark_queue.errors import StoreError
from spark_queue.store.producers.producer_batch import EVENT, BatchWriter, Call
from spark_queue.store.producers.producer_replies import Ack, Reply, answer_unanswered

_get_ident = threading.get_ident


class CallQueue:
    """Calls waiting for a batch, the lead that writes them, and the writer thread."""

    path: str  # the store's, for messages

    def __init__(
        self, batches: BatchWriter, linger_ms: int, max_batch: int, max_pending: int
    ) -> None:
        self._batches = batches
        self._linger_s = linger_ms / 1000
        self._max_batch = max_batch
        self._max_pending = max_pending
        self._lock = threading.Lock()
        self._writer_wanted = threading.Condition(self._lock)
        self._linger_cut = threading.Condition(self._lock)
        self._has_room = threading.Condition(self._lock)
        self._progress = threading.Condition(self._lock)
        # With a linger: how many more calls the next batch waits for (as many
        # as the last batch held blocking calls: their threads tend to call
        # again at once); -1 when it held none (the linger runs out).
        self._awaited = -1
        # Appended to without the lock by *_nowait calls (see _send); taken from
        # the left under it, so no call lands in a list a writer already took.
        self._pending: deque[Call] = deque()
        self._in_flight = 0  # calls in the batch being written
        self._lingering = False  # a leader waits out the linger (see _send)
        self._oldest_at = 0.0  # monotonic arrival of the oldest waiting call
        # The lead: held by the thread writing (or handed a batch to write)
        # whenever calls wait, so a waiting call always has a writer coming.
        self._leading = False
        self._writer_leads = False  # the lead was handed to the writer thread
        self._writing_in = 0  # ident of the thread writing a batch now, else 0
        self._flushing = 0
        self._closed = False
        self._stopping = False
        #: Calls written or failed so far, and the transactions that held them.
        self.calls_done = 0
        self.batches_committed = 0
        self._writer = threading.Thread(
            target=self._standby, name="spark_queue-producer", daemon=True
        )
        self._writer.start()

    def _submit(self, call: Call, reply: Reply | Ack) -> None:
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
            pending = self._pending
            if self._closed:
                raise _closed(self.path)
            pending.append(call)
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

    def _send(self, call: Call) -> None:
        """Queue a ``*_nowait`` call: without the lock while a writer leads.

        The deque's append is atomic; what needs the lock is rare: a full
        queue, a linger counting calls, a producer closing, no one leading,
        the first call of a linger, a full batch while a leader lingers. Each
        check after the append pairs with the writer's: a leader drops the
        lead before its last look at the queue (see :meth:`_lead`), and
        ``close`` stops the writer only once the queue is empty, so a queued
        call always has a writer coming, or is taken back here.
        """
        pending = self._pending
        if self._closed or self._awaited > 0 or len(pending) >= self._max_pending:
            self._submit(call, call[2])
            return
        pending.append(call)
        waiting = len(pending)
        if (
            not self._leading
            or self._closed
            or (self._linger_s and (waiting == 1 or (waiting >= self._max_batch
                                                     and self._lingering)))
        ):
            self._after_send(call, waiting)

    def _after_send(self, call: Call, waiting: int) -> None:
        """The rare part of :meth:`_send`, under the lock."""
        with self._lock:
            if self._closed:
                try:
                    self._pending.remove(call)
                except ValueError:
                    return  # a writer took it before the close: it is answered
                raise _closed(self.path)
            if self._linger_s:
                self._arrived(waiting)
            if not self._leading and self._pending:  # else a leader took it meanwhile
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
        if waiting >= self._max_batch:  # *_nowait calls may pass it before one looks
            self._linger_cut.notify()

    def _call(self, call: Call, reply: Reply) -> int:
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

    @property
    def _sent(self) -> int:
        """Calls queued so far: answered, being written, or waiting."""
        return self.calls_done + self._in_flight + len(self._pending)

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
                    self._in_flight = len(batch)
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
                        # Dropped before the last look: a call queued without the
                        # lock either sees no leader (and finds one) or is seen here.
                        self._leading = False
                        if not self._pending:
                            return
                        self._leading = True
                    if self._pass_lead(me):
                        return
            except BaseException:
                # Interrupted (a signal in the main thread): the lead must not stay here.
                if self._pending:
                    self._pass_lead()
                else:
                    self._leading = False
                raise

    def _done(self, batch: list[Call], committed: bool) -> None:
        """Count a batch written or failed (the caller holds the lock)."""
        if not committed:
            answer_unanswered(batch)
        self._in_flight = 0
        self.calls_done += len(batch)
        self.batches_committed += committed
        if self._flushing or self._closed:
            self._progress.notify_all()

    def _take(self) -> list[Call]:
        """The next batch (the caller holds the lock): the oldest calls, up to max_batch."""
        pending = self._pending
        if self._linger_s:
            deadline = self._oldest_at + self._linger_s
            self._lingering = True
            try:
                while (
                    len(pending) < self._max_batch
                    and self._awaited
                    and not self._closed
                    and not self._flushing
                    and (remaining := deadline - time.monotonic()) > 0
                ):
                    self._linger_cut.wait(remaining)
            finally:
                self._lingering = False
            # What is left waited through this batch already: it goes next, no linger.
            self._oldest_at = 0.0
        if len(pending) >= self._max_pending:
            self._has_room.notify_all()
        take = pending.popleft
        batch = [take() for _ in range(min(len(pending), self._max_batch))]
        if self._linger_s:
            # Counted from now: a blocking caller cannot call again before
            # this batch answers it.
            self._awaited = sum(type(call[2]) is Reply for call in batch) or -1
        return batch

    def _pass_lead(self, me: int = 0) -> bool:
        """Hand the lead to the first blocking call of the next batch, else to the writer
        thread (the caller holds the lock, and calls wait). False if ``me`` keeps it."""
        # A list first: *_nowait calls append meanwhile, and a deque changed while
        # Python code iterates it raises.
        for call in list(itertools.islice(self._pending, self._max_batch)):
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


def _closed(path: str) -> StoreError:
    return StoreError(f"producer for {path!r} is closed; open a new Producer to write.")
