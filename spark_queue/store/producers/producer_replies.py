"""How a producer call hears its answer, and a batch's answers settled together.

A blocking call waits on a :class:`Reply` (one lock, no Condition); a
``*_nowait`` call gets an :class:`Ack`, a :class:`~concurrent.futures.Future`
that shares one Condition with every other Ack of its producer. A plain
Future costs a Condition, an RLock, a deque and two lists per call, and a
service that keeps many in flight pays for them again in every garbage
collection that walks them (8 threads x 20,000 calls in flight spent more
time in the collector than in SQLite). An Ack is one object with its fields
in slots (no instance dict to make when the writer settles it); its lists are
made only if someone waits on it with :func:`concurrent.futures.wait` or adds
a callback. The writer settles a whole batch under the shared Condition and
wakes the waiting threads once (:func:`settle_all`).

An Ack is RUNNING from the start: the call is queued when the future is
returned and will be written, so ``cancel()`` returns False, as it does for
an executor's running task.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, TimeoutError
from concurrent.futures._base import FINISHED, RUNNING
from typing import Any

from spark_queue.errors import StoreError

LOGGER = logging.getLogger("spark_queue.store.producer")


class Reply:
    """A blocking call's answer slot: a lock held from the start, released by the writer
    (lighter than a Future: no Condition, no callbacks). ``leads`` set on release means
    "write the next batch" rather than "answered"."""

    __slots__ = ("wake", "value", "error", "leads", "abandoned", "answered")

    def __init__(self) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()
        self.error: BaseException | None = None
        self.leads = self.abandoned = self.answered = False

    def done(self) -> bool:
        return self.answered

    def set_result(self, value: int) -> None:
        self.value = value
        self.answered = True
        self.wake.release()

    def set_exception(self, error: BaseException) -> None:
        self.error = error
        self.answered = True
        self.wake.release()


class Ack(Future[int]):
    """A ``*_nowait`` call's future of its offset or job id (see the module docstring)."""

    # Slots, not the instance dict a Future has: settling a batch sets two fields per
    # Ack, 4x faster in slots, and an Ack in flight is then one tracked object, not two.
    __slots__ = ("_condition", "_state", "_result", "_exception")
    _waiting: list[Any] | None = None  # concurrent.futures.wait's waiters, made on demand
    _callbacks: list[Callable[[Future[int]], object]] | None = None

    def __init__(self, condition: threading.Condition) -> None:  # noqa: D107 - no super(): see module
        self._condition = condition
        self._state = RUNNING
        self._result: Any = None
        self._exception: BaseException | None = None

    @property
    def _waiters(self) -> list[Any]:
        if self._waiting is None:
            self._waiting = []
        return self._waiting

    @_waiters.setter
    def _waiters(self, waiters: list[Any]) -> None:
        self._waiting = waiters

    def add_done_callback(self, fn: Callable[[Future[int]], object]) -> None:
        with self._condition:
            if self._state != FINISHED:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(fn)
                return
        _call_back(fn, self)

    def _invoke_callbacks(self) -> None:
        for fn in self._callbacks or ():
            _call_back(fn, self)

    def result(self, timeout: float | None = None) -> int:
        if self._state != FINISHED:
            self._wait(timeout)
        if self._exception is not None:
            try:
                raise self._exception
            finally:
                self = None  # type: ignore[assignment]  # no cycle through the traceback
        return self._result

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._wait(timeout)
        return self._exception

    def _wait(self, timeout: float | None) -> None:
        """Until answered: the shared Condition also wakes for other calls' answers."""
        if self._state == FINISHED:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._condition:
            while self._state != FINISHED:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError()
                self._condition.wait(remaining)


def _call_back(fn: Callable[[Future[int]], object], future: Future[int]) -> None:
    try:
        fn(future)
    except Exception:  # noqa: BLE001 - as concurrent.futures does: one bad callback is logged
        LOGGER.exception("exception calling callback for %r", future)


def settle_all(condition: threading.Condition, answers: Iterable[tuple[Any, Any]]) -> None:
    """Answer ``(reply, offset, job id or error)`` pairs: every Ack under one hold of
    ``condition`` and one wake-up of its waiters, then each Reply, then callbacks."""
    replies = []
    called = []
    with condition:
        for reply, result in answers:
            if not isinstance(reply, Ack):
                replies.append((reply, result))
                continue
            if type(result) is int or not isinstance(result, BaseException):
                reply._result = result
                add = "add_result"
            else:
                reply._exception = _twin(result)
                add = "add_exception"
            reply._state = FINISHED
            if reply._waiting:
                for waiter in reply._waiting:
                    getattr(waiter, add)(reply)
            if reply._callbacks:
                called.append(reply)
        condition.notify_all()
    for reply, result in replies:
        settle(reply, result)
    for ack in called:
        ack._invoke_callbacks()


def answer_unanswered(batch: list[tuple[Any, ...]]) -> None:
    """After an interrupt cut a batch's write short: no caller may wait forever."""
    error = StoreError("the producer's batch write was interrupted; it may not have committed.")
    for call in batch:
        if not call[2].done():
            settle(call[2], error)


def settle(reply: Any, result: Any) -> None:
    """Answer one call with its offset or job id, or with the error that failed it."""
    if isinstance(result, BaseException):
        reply.set_exception(_twin(result))
    else:
        reply.set_result(result)


def _twin(error: BaseException) -> BaseException:
    """Each caller raises a copy: threads raising one instance would splice their
    tracebacks into it. The copy's cause is the writer's original."""
    try:
        twin = copy.copy(error)
    except Exception:  # noqa: BLE001 - an exception type that cannot be copied
        return error
    twin.__cause__ = error
    return twin
