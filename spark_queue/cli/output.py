"""How CLI commands print: aligned tables for people, JSON for scripts."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any


def emit(rows: Sequence[Mapping[str, Any]], *, as_json: bool, columns: Sequence[str]) -> None:
    """Print ``rows`` as one JSON array, or as a table with ``columns`` in that order."""
    if as_json:
        print(json.dumps(list(rows), default=_jsonable, ensure_ascii=False))
        return
    if not rows:
        print("(none)")
        return
    cells = [[_text(row.get(col)) for col in columns] for row in rows]
    widths = [max(len(col), *(len(r[i]) for r in cells)) for i, col in enumerate(columns)]
    print("  ".join(col.ljust(w) for col, w in zip(columns, widths, strict=True)).rstrip())
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def emit_object(obj: Mapping[str, Any], *, as_json: bool) -> None:
    """Print one record: JSON, or ``key: value`` lines."""
    if as_json:
        print(json.dumps(obj, default=_jsonable, ensure_ascii=False))
        return
    width = max((len(k) for k in obj), default=0)
    for key, value in obj.items():
        print(f"{key.ljust(width)}  {_text(value)}")


def emit_line(obj: Any) -> None:
    """One NDJSON line, flushed at once (for `tail --follow` into a pipe)."""
    sys.stdout.write(json.dumps(obj, default=_jsonable, ensure_ascii=False) + "\n")
    sys.stdout.flush()


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
