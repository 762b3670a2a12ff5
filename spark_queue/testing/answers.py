"""Comparing the rows a sink holds with the rows a test expects, and saying how they differ.

Both sides are brought to one plain form first, so a test reads the same whatever the sink:
a Spark ``Row`` or a mapping becomes a dict (nested ones too), a date or a timestamp its
ISO-8601 text (the form the sqliteq sink stores, as Spark's ``to_json``), a list a tuple.
An expected row is a dict (compared by column), a tuple (by position) or, for a sink row of
one column, that column's value.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from spark_queue.errors import StreamTestError


def plain(value: Any) -> Any:
    """``value`` in the one form both sides of a comparison take (hashable)."""
    as_dict = getattr(value, "asDict", None)
    if callable(as_dict):  # a pyspark Row (Classic and Connect), without importing pyspark
        value = as_dict(recursive=True)
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), plain(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(plain(v) for v in value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def shaped(expected: Any, like: Mapping[str, Any] | None) -> Any:
    """The plain form of ``expected`` compared with sink rows shaped as ``like`` (a dict of
    columns): a tuple is matched by position, a bare value to a one-column row."""
    if like is None or isinstance(expected, Mapping) or callable(getattr(expected, "asDict", None)):
        return plain(expected)
    names = list(like)
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(names):
            return plain(expected)  # cannot be one of these rows: reported as missing
        return plain(dict(zip(names, expected, strict=True)))
    if len(names) == 1:
        return plain({names[0]: expected})
    return plain(expected)


def compare(
    actual: Sequence[Mapping[str, Any]], expected: Iterable[Any], *, ordered: bool, what: str
) -> None:
    """Raise :class:`StreamTestError` with a diff unless ``actual`` holds ``expected``:
    the same rows, each as many times (and in the same order when ``ordered``)."""
    like = actual[0] if actual else None
    want = [shaped(row, like) for row in expected]
    got = [plain(row) for row in actual]
    if (got == want) if ordered else (Counter(got) == Counter(want)):
        return
    raise StreamTestError(diff(got, want, what=what, ordered=ordered))


def diff(got: list[Any], want: list[Any], *, what: str, ordered: bool) -> str:
    """A readable account of how ``got`` differs from ``want``: the rows missing, the rows
    extra, and the rows counted more (or fewer) times than expected."""
    have, need = Counter(got), Counter(want)
    lines = [f"{what}: {len(got)} rows where {len(want)} were expected."]
    missing = [row for row in need if row not in have]
    extra = [row for row in have if row not in need]
    counted = [(row, have[row], need[row]) for row in need
               if row in have and have[row] != need[row]]
    for title, rows in (("missing", missing), ("extra", extra)):
        if rows:
            lines.append(f"  {title} ({len(rows)}):")
            lines.extend(f"    {show(row)}" + (f"  x{(need if title == 'missing' else have)[row]}"
                                               if (need if title == 'missing' else have)[row] > 1
                                               else "") for row in rows)
    if counted:
        lines.append(f"  counted wrongly ({len(counted)}):")
        lines.extend(f"    {show(row)}: {n} times, expected {m}"
                     + (" (counted twice: a replayed batch?)" if n > m else "")
                     for row, n, m in counted)
    if ordered and not (missing or extra or counted):
        lines.append("  the same rows in another order; got:")
        lines.extend(f"    {show(row)}" for row in got)
    return "\n".join(lines)


def show(row: Any) -> str:
    """A plain row as a user wrote it: a dict for columns, else the value."""
    if isinstance(row, tuple) and row and all(
        isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) for item in row
    ):
        return "{" + ", ".join(f"{k!r}: {show(v)}" for k, v in row) + "}"
    return repr(row)
