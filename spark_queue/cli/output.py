"""How CLI commands print: aligned tables for people, JSON for scripts.

Times: tables and ``key: value`` records show the fields in :data:`TIME_FIELDS`
as UTC ISO-8601 (``2024-05-01T12:00:00.123Z``) under a name ending in
``_utc`` instead of ``_ms``, and the spans in :data:`DURATION_FIELDS` as the
durations the flags take (``7d``, ``90m``, ``1500ms``) under the name without
``_ms``; ``--json`` keeps the raw milliseconds.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from spark_queue.setting_table import QUEUE_SETTINGS, TOPIC_SETTINGS

# Fields that hold a point in time as epoch milliseconds.
TIME_FIELDS = frozenset({
    "timestamp_ms", "created_ms", "updated_ms", "enqueued_ms", "available_at_ms",
    "lease_expires_ms", "expires_ms", "dead_ms", "started_ms", "seen_ms",
})
# Fields that hold a span of time in milliseconds: the duration settings, as declared.
DURATION_FIELDS = frozenset(
    {"max_age_ms", "oldest_ready_age_ms"}
    | {s.name for s in QUEUE_SETTINGS + TOPIC_SETTINGS if s.duration}
)


def emit(rows: Sequence[Mapping[str, Any]], *, as_json: bool, columns: Sequence[str],
         durations: frozenset[str] = frozenset(), times: frozenset[str] = frozenset()) -> None:
    """Print ``rows`` as one JSON array, or as a table with ``columns`` in that order;
    ``durations`` and ``times`` name this command's own span and time fields, shown as
    those of :data:`DURATION_FIELDS` and :data:`TIME_FIELDS` are."""
    if as_json:
        print(json.dumps(list(rows), default=_jsonable, ensure_ascii=False))
        return
    if not rows:
        print("(none)")
        return
    cells = [[_cell(col, row.get(col), durations, times) for col in columns] for row in rows]
    headers = [header(col, durations, times) for col in columns]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def emit_object(obj: Mapping[str, Any], *, as_json: bool, durations: frozenset[str] = frozenset(),
                times: frozenset[str] = frozenset()) -> None:
    """Print one record: JSON, or ``key: value`` lines (``durations``, ``times``: as emit's)."""
    if as_json:
        print(json.dumps(obj, default=_jsonable, ensure_ascii=False))
        return
    width = max((len(header(k, durations, times)) for k in obj), default=0)
    for key, value in obj.items():
        print(f"{header(key, durations, times).ljust(width)}  "
              f"{_cell(key, value, durations, times)}")


def emit_line(obj: Any) -> None:
    """One NDJSON line, flushed at once (for `tail --follow` into a pipe)."""
    sys.stdout.write(json.dumps(obj, default=_jsonable, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def show_time(millis: int | None) -> str:
    """A point in time as tables show it: UTC ISO-8601, or '-' for none."""
    from spark_queue.times import format_time_ms

    return "-" if millis is None else format_time_ms(millis)


def header(field: str, durations: frozenset[str] = frozenset(),
           times: frozenset[str] = frozenset()) -> str:
    """A table's name for ``field``: time fields say they are UTC (``updated_utc``),
    durations lose the ``_ms`` their cells no longer need (``retention``)."""
    if field in TIME_FIELDS or field in times:
        return field[: -len("_ms")] + "_utc"
    return field[: -len("_ms")] if field in DURATION_FIELDS or field in durations else field


def _cell(field: str, value: Any, durations: frozenset[str] = frozenset(),
          times: frozenset[str] = frozenset()) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        if field in TIME_FIELDS or field in times:
            return show_time(value)
        if field in DURATION_FIELDS or field in durations:
            from spark_queue.times import format_duration_ms

            return format_duration_ms(value)
    return _text(value)


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bytes):
        return repr(value)
    return str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        # JSON has no bytes: show them base64 so scripts can round-trip them.
        import base64

        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, range):
        return list(value)
    raise TypeError(f"cannot print {type(value).__name__} as JSON")


def one_line_error(error: str | None) -> str | None:
    """The line of an error text that says what went wrong: a traceback's last line (the
    exception and its message), else the first line."""
    if error is None:
        return None
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    if not lines:
        return error
    return lines[-1] if lines[0].startswith("Traceback") else lines[0]
