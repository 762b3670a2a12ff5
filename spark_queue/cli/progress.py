"""Progress of long work, on stderr and only for a person watching.

Nothing here writes unless :func:`watching` found a terminal: progress never
lands in a pipe, a log file or next to ``--json`` output. Each reporter takes
its stream, so tests hand it one.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from spark_queue.store import QueueStats


def watching(as_json: bool) -> TextIO | None:
    """stderr when it is a terminal and the output is not ``--json``; else None."""
    if as_json or not sys.stderr.isatty():
        return None
    return sys.stderr


class BackupProgressPrinter:
    """One self-overwriting line, for copies long enough to watch (> 2 steps of pages)."""

    MIN_PAGES = 4096

    def __init__(self, stream: TextIO, page_size: int) -> None:
        self.stream = stream
        self.page_size = page_size
        self.shown = False

    def __call__(self, copied: int, total: int) -> None:
        if total < self.MIN_PAGES:
            return
        self.shown = True
        mib = copied * self.page_size / 2**20
        self.stream.write(f"\rsqliteq backup: {copied * 100 // total:3d}% "
                          f"({copied:,} of {total:,} pages, {mib:,.1f} MiB)")
        self.stream.flush()

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


class ExportProgress:
    """``kafka export``: one self-overwriting line per topic, ended when the topic is sent."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, topic: str, done: int, total: int) -> None:
        self.stream.write(f"\rsqliteq kafka export: {topic} {done:,} of {total:,} events "
                          f"({done * 100 // max(total, 1)}%)")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


class DelayedJobsWait:
    """What a ``worker --until-empty`` waits for, one line each time it changes.

    Called by every idle worker slot (from their threads) with the queue's
    stats; says nothing while no job is delayed (ready and leased jobs are
    work under way, not a wait). Whole lines, not a self-overwriting one: the
    worker's own log lines go to the same stderr.
    """

    def __init__(self, stream: TextIO, queue: str) -> None:
        self.stream = stream
        self.queue = queue
        self._last: int | None = None
        import threading  # only a worker's wait needs it: not imported for `sqliteq --help`

        self._lock = threading.Lock()

    def __call__(self, stats: QueueStats) -> None:
        with self._lock:
            if stats.delayed == self._last or (stats.delayed == 0 and self._last is None):
                return
            self._last = stats.delayed
            if stats.delayed == 0:
                return
            self.stream.write(
                f"sqliteq worker: --until-empty waits for {stats.delayed} delayed job(s) of "
                f"queue {self.queue!r} to come due ({stats.leased} leased now)\n"
            )
            self.stream.flush()


class NdjsonProgress:
    """``sqliteq COMMAND: N VERB`` on one self-overwriting stderr line, at most once a second.

    Silent when ``stream`` is None (what :func:`watching` gives for a pipe or ``--json``).
    """

    EVERY_S = 1.0

    def __init__(self, stream: TextIO | None, command: str, verb: str) -> None:
        self.stream = stream
        self.label = f"sqliteq {command}:"
        self.verb = verb
        self.shown_at: float | None = None
        self.last = 0

    def update(self, done: int) -> None:
        self.last = done
        if self.stream is None:
            return
        now = time.monotonic()
        if self.shown_at is not None and now - self.shown_at < self.EVERY_S:
            return
        self.shown_at = now
        self.stream.write(f"\r{self.label} {done:,} {self.verb}")
        self.stream.flush()

    def finish(self) -> None:
        if self.stream is not None and self.shown_at is not None:
            self.stream.write(f"\r{self.label} {self.last:,} {self.verb}\n")
            self.stream.flush()
