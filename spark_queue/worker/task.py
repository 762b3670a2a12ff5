"""What becomes of a claimed job: the one place a handler's outcome, or a stop, becomes an
:class:`Action` (honker's ``run_task``); the loop that claims only carries it out.

- A handler that returns succeeded: ``ack``, with the rest of its batch (in the
  transaction that claims the next).
- A handler that raises anything, any :class:`BaseException` (``KeyboardInterrupt``,
  ``SystemExit``, ``GeneratorExit``, ``asyncio.CancelledError``, a class of its own)
  failed: ``nack`` at once with the traceback as its ``last_error``; the store retries
  it after its backoff or dead-letters it at max attempts with its real error. None of
  these stops the worker: it stops only for its own shutdown signals, which its signal
  handlers turn into a flag and never raise in a handler's thread.
- A job still held when the worker stops (:func:`held_at_stop`): never started, it is
  released (the attempt not counted); its handler returned but the ack was not written,
  it is released with the attempt counted (it runs again); its handler still running,
  it is nacked at once (no backoff) with an error saying so, so a job that hangs every
  time dies at max attempts with that error, not a lease expiry's.

The error text is made storable first: SQLite keeps text as UTF-8, so a lone
surrogate (``bytes.decode(errors="surrogateescape")`` makes them) is escaped as
``\\udc80``; an exception whose ``str()`` itself raises is named by its type; a text
beyond :data:`MAX_ERROR_CHARS` keeps its head and its tail (where the exception is).
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from spark_queue.store import NackResult
from spark_queue.times import format_duration_ms
from spark_queue.worker.inflight import Phase
from spark_queue.worker.job_transaction import WorkerJob

log = logging.getLogger("spark_queue.worker")

# A handler gets a WorkerJob (a Job with ``transaction``): one annotated ``job: Job`` fits too.
Handler = Callable[[WorkerJob], Any]

# Enough for any real traceback; a message of megabytes would bloat every read of the job.
MAX_ERROR_CHARS = 64 * 1024
# A failure's log line: a message of a megabyte is not a line.
MAX_LINE_CHARS = 500


@dataclass(frozen=True)
class Action:
    """What the loop does with a job: ``ack`` it, ``nack`` it with ``error`` (the store
    retries it after its backoff, or at once with ``delay_ms=0``, or dead-letters it at
    max attempts), or ``release`` it (back to ready; ``count_attempt`` if it ran).
    ``line`` is a failure's one-line summary for the log; ``interrupted``: a nack of a
    handler still running when the worker stopped, not a failure of its own."""

    kind: Literal["ack", "nack", "release"]
    error: str = ""
    line: str = ""
    delay_ms: int | None = None
    count_attempt: bool = False
    interrupted: bool = False


ACK = Action("ack")


@dataclass(frozen=True)
class Failure:
    """A handler that raised: the storable traceback and the exception's one-line summary."""

    error: str
    line: str


def run_task(handler: Handler, job: WorkerJob) -> Failure | None:
    """Call ``handler(job)``; None if it returned, else what it raised, ready to store.

    Catches every :class:`BaseException`: in a worker's slot thread nothing a handler
    raises is the worker's own shutdown (that arrives as a flag, see the module docstring).
    """
    try:
        handler(job)
    except BaseException as exc:  # noqa: BLE001 - the policy: every raise fails the job
        return Failure(storable(_traceback_text(exc)), one_line(exc))
    return None


def task_action(handler: Handler, job: WorkerJob) -> Action:
    """:func:`run_task`'s outcome as the action: ``ack`` if the handler returned, else a
    ``nack`` with what it raised."""
    failure = run_task(handler, job)
    return ACK if failure is None else Action("nack", failure.error, failure.line)


def held_at_stop(phase: Phase, why: str) -> Action:
    """What becomes of a job the worker holds when it stops, by the job's phase; ``why``
    is the error a still-running job is nacked with."""
    if phase == "claimed":
        return Action("release")
    if phase == "finished":
        return Action("release", count_attempt=True)
    return Action("nack", storable(why), delay_ms=0, interrupted=True)


def outcome_text(result: NackResult) -> str:
    """``retry in 2s`` (in the units of the CLI's flags and tables), ``dead-lettered``, or
    that the lease was lost first."""
    if result.dead:
        return "dead-lettered"
    if result.retried:
        # The store's clock (epoch ms), as NackResult.retry_at_ms is.
        now = time.time_ns() // 1_000_000
        wait_ms = max(0, result.retry_at_ms[0] - now) if result.retry_at_ms else 0
        if wait_ms >= 1000:  # whole seconds, rounded up: 1473 ms of backoff reads "2s"
            wait_ms = -(-wait_ms // 1000) * 1000
        return f"retry in {format_duration_ms(wait_ms)}"
    return "its lease was lost before the nack: it will run again"


def storable(text: str) -> str:
    """``text`` as SQLite can keep it (UTF-8, no lone surrogates), at most MAX_ERROR_CHARS."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) > MAX_ERROR_CHARS:
        half = MAX_ERROR_CHARS // 2
        cut = len(text) - 2 * half
        text = f"{text[:half]}\n... [{cut} characters cut] ...\n{text[-half:]}"
    return text


def one_line(exc: BaseException) -> str:
    """``TypeError: string indices must be integers``: what a traceback ends with, on one
    line (a message's own newlines escaped) and storable."""
    try:
        lines = traceback.format_exception_only(type(exc), exc)
        text = "".join(lines).strip()
    except BaseException:  # noqa: BLE001 - a __str__ may raise anything
        text = f"{type(exc).__qualname__}: <its message could not be read>"
    if not text:
        text = type(exc).__qualname__
    text = storable(text.replace("\r", "\\r").replace("\n", "\\n"))
    if len(text) > MAX_LINE_CHARS:  # a log line, not the stored error: that keeps it all
        text = f"{text[:MAX_LINE_CHARS]}... ({len(text)} characters)"
    return text


def _traceback_text(exc: BaseException) -> str:
    try:
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except BaseException:  # noqa: BLE001 - a __str__ may raise anything
        return f"{type(exc).__qualname__}: <its message could not be read>"
