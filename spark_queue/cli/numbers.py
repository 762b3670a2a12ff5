"""Numeric flags, checked when argparse reads them: a value SQLite or a worker cannot hold
is a usage error naming the flag, never an OverflowError from deep inside a command.

Every ``*_ms`` flag takes a duration as :mod:`spark_queue.times` reads it
(``500ms``, ``30s``, ``15m``, ``1h``, ``7d``; a bare number is milliseconds).

SQLite integers are signed 64-bit. Durations are added to epoch milliseconds in
SQL (``now + delay_ms``), so they stop at :data:`MAX_STORED`, which leaves
room for any clock; the worker sleeps on its intervals, so those stop at what
Python can wait (``threading.TIMEOUT_MAX``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from spark_queue.defaults import MAX_INT64, MAX_STORED, MAX_WAIT_MS

# spark_queue.times (and datetime) load when a flag is read, not for `sqliteq --help`.

_NOTES = {
    MAX_INT64: " (2**63 - 1, SQLite's largest integer)",
    MAX_STORED: " (2**62 - 1, the store's limit)",
    MAX_WAIT_MS: " (the longest a thread can wait)",
}


def integer(low: int, high: int = MAX_INT64) -> Callable[[str], int]:
    """An argparse ``type=``: an integer from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer; got {text!r}") from None
        if not low <= value <= high:
            note = _NOTES.get(high, "")
            raise argparse.ArgumentTypeError(
                f"must be an integer from {low} to {high}{note}; got {text}"
            )
        return value

    parse.__name__ = "integer"  # argparse names the type in its fallback message
    return parse


def number(low_exclusive: float, high: float) -> Callable[[str], float]:
    """An argparse ``type=``: a finite number above ``low_exclusive``, at most ``high``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number; got {text!r}") from None
        if not low_exclusive < value <= high:
            raise argparse.ArgumentTypeError(
                f"must be a number > {low_exclusive:g} and <= {high:g}; got {text}"
            )
        return value

    parse.__name__ = "number"
    return parse


def duration(low_ms: int, high_ms: int) -> Callable[[str], int]:
    """An argparse ``type=``: a duration in milliseconds from ``low_ms`` to ``high_ms``."""

    def parse(text: str) -> int:
        from spark_queue.times import DURATION_HELP, parse_duration_ms

        millis = parse_duration_ms(text)
        if millis is None:
            raise argparse.ArgumentTypeError(f"must be {DURATION_HELP}; got {text!r}")
        if not low_ms <= millis <= high_ms:
            note = _NOTES.get(high_ms, "")
            raise argparse.ArgumentTypeError(
                f"must be from {low_ms} to {high_ms} ms{note}; got {text}"
            )
        return millis

    parse.__name__ = "duration"
    return parse


def point_in_time(text: str) -> int:
    """An argparse ``type=``: epoch milliseconds from an ISO-8601 time, epoch ms, or a
    duration with a unit counted back from now (``10m`` = ten minutes ago)."""
    from spark_queue.times import TIME_HELP, has_unit, parse_duration_ms, parse_time_ms

    back_ms = parse_duration_ms(text) if has_unit(text) else None
    if back_ms is not None:
        return max(0, time.time_ns() // 1_000_000 - back_ms)
    millis = parse_time_ms(text)
    if millis is None:
        raise argparse.ArgumentTypeError(
            f"must be a duration back from now such as 10m, 2h or 7d, or {TIME_HELP}; "
            f"got {text!r}"
        )
    if millis > MAX_STORED:
        raise argparse.ArgumentTypeError(
            f"must be a time up to {MAX_STORED} epoch ms{_NOTES[MAX_STORED]}; got {text}"
        )
    return millis


def start_position(text: str) -> str | int:
    """An argparse ``type=`` for ``tail --from``: ``earliest``, ``latest``, an offset, or
    ``-N`` for the last N events (as ``kcat -o -N``)."""
    if text in ("earliest", "latest"):
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be 'earliest', 'latest', an offset >= 0 or -N for the last N events; "
            f"got {text!r}"
        ) from None
    if not -MAX_STORED <= value <= MAX_STORED:
        raise argparse.ArgumentTypeError(
            f"must be an offset from -{MAX_STORED} to {MAX_STORED}{_NOTES[MAX_STORED]}; "
            f"got {text}"
        )
    return value


count = integer(0)  # how many: 0 allowed (a limit of 0 prints nothing)
positive = integer(1, MAX_STORED)  # sizes, counts and settings that must be at least one
priority = integer(-MAX_STORED, MAX_STORED)
job_id = integer(1)
duration_ms = duration(0, MAX_STORED)  # stored durations, added to a timestamp in SQL
positive_duration_ms = duration(1, MAX_STORED)
wait_ms = duration(0, MAX_WAIT_MS)  # what this process sleeps on
positive_wait_ms = duration(1, MAX_WAIT_MS)
