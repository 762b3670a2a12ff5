"""Durations and times given to CLI flags: one reading for every command, one error shape.

``--retention 7d``, ``--since 10m``, ``--to-time 2024-05-01T12:00:00Z``: the
text goes through :mod:`spark_queue.times`; what it refuses becomes one line
naming the flag, the value and what is allowed.
"""

from __future__ import annotations

from spark_queue.errors import OptionError
from spark_queue.times import (
    DURATION_HELP,
    TIME_HELP,
    has_unit,
    parse_duration_ms,
    parse_time_ms,
)


def duration_flag(flag: str, text: str, *, minimum_ms: int = 1) -> int:
    """``text`` in milliseconds (``7d``, ``500ms``; a bare number is ms), >= ``minimum_ms``."""
    millis = parse_duration_ms(text)
    if millis is None or millis < minimum_ms:
        floor = "" if minimum_ms <= 0 else f" (at least {minimum_ms}ms)"
        raise OptionError(f"{flag} must be {DURATION_HELP}{floor}; got {text!r}.")
    return millis


def time_flag(flag: str, text: str, now_ms: int) -> int:
    """A point in time: a duration with a unit counts back from ``now_ms`` (``10m`` = ten
    minutes ago); otherwise an ISO-8601 time or epoch milliseconds."""
    if has_unit(text):
        return max(0, now_ms - parse_duration_ms(text))
    millis = parse_time_ms(text)
    if millis is None:
        raise OptionError(
            f"{flag} must be a duration back from now such as 10m, 2h or 7d, or {TIME_HELP}; "
            f"got {text!r}."
        )
    return millis
