"""Durations and points in time as people type them, and times as people read them.

One parser for every place that takes a duration (the CLI's flags, the
connector's ``maxTriggerDelay``) and one for a point in time, so ``7d`` or
``2024-05-01T12:00:00Z`` mean the same everywhere. Stdlib only: the CLI and
the connector's option table import it. Parsers return None for text they do
not accept; each caller raises its own error naming its flag or option.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

DURATION_HELP = "a duration such as 500ms, 30s, 15m, 1h or 7d (a bare number is milliseconds)"
TIME_HELP = (
    "an ISO-8601 time such as 2024-05-01T12:00:00Z (no zone means UTC) "
    "or milliseconds since the epoch"
)

_DURATION = re.compile(r"\s*(\d+)\s*(ms|s|sec|secs|m|min|mins|h|hour|hours|d|day|days)?\s*", re.I)
_UNIT_MS = {
    None: 1, "ms": 1, "s": 1000, "sec": 1000, "secs": 1000, "m": 60_000, "min": 60_000,
    "mins": 60_000, "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
# Largest first: how format_duration_ms writes a duration back.
_SHOW_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000))


def parse_duration_ms(text: str) -> int | None:
    """``500ms``, ``2s``, ``15m``, ``1h``, ``7d`` (a bare number is ms) in milliseconds, or None."""
    match = _DURATION.fullmatch(text)
    if match is None:
        return None
    unit = match.group(2).lower() if match.group(2) else None
    return int(match.group(1)) * _UNIT_MS[unit]


def has_unit(text: str) -> bool:
    """Whether ``text`` is a duration with a unit (``10m``), not a bare number."""
    match = _DURATION.fullmatch(text)
    return match is not None and match.group(2) is not None


def parse_time_ms(text: str) -> int | None:
    """Milliseconds since the epoch from ISO-8601 (no zone = UTC) or a bare ms number, or None.

    Times before 1970 are refused (None): no event is stamped before it.
    """
    stripped = text.strip()
    if re.fullmatch(r"\d+", stripped):
        return int(stripped)
    try:
        parsed = datetime.fromisoformat(stripped.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    millis = int(parsed.timestamp() * 1000)
    return millis if millis >= 0 else None


def format_time_ms(millis: int) -> str:
    """``2024-05-01T12:00:00.123Z``: UTC, millisecond precision, sortable as text."""
    moment = datetime.fromtimestamp(millis // 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def format_duration_ms(millis: int) -> str:
    """The shortest exact form: ``7d``, ``90m``, ``1500ms``."""
    for unit, size in _SHOW_UNITS:
        if millis and millis % size == 0:
            return f"{millis // size}{unit}"
    return f"{millis}ms"
