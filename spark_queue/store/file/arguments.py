"""The one integer check: every public store method (and the worker's settings) passes its
integer arguments through :func:`check_int` before SQL sees them.

SQLite keeps 64-bit signed integers; apsw raises a bare ``OverflowError`` for anything
wider, and a negative count or duration means nothing. The message names the argument,
the allowed range and the value, in the one form every check shares.
"""

from __future__ import annotations

from typing import Any

from spark_queue.defaults import MAX_INT64
from spark_queue.errors import ArgumentError, SparkQueueError
from spark_queue.setting_table import describe_range, is_int_within


def check_int(
    value: Any,
    name: str,
    *,
    low: int | None = 0,
    high: int | None = MAX_INT64,
    error: type[SparkQueueError] = ArgumentError,
    owner: str = "",
    or_none: str | None = None,
) -> int:
    """``value`` if it is an int (not a bool) within ``[low, high]``; otherwise ``error``
    naming ``name`` (after ``owner``, e.g. "queue 'q' setting"), the range and the value.
    ``high`` defaults to what SQLite can hold; ``None`` means no bound (a value SQL never
    sees). ``or_none`` (when not None) says in the message that None is allowed too, and
    what it means."""
    if not is_int_within(value, low, high):
        allowed = describe_range(low, high)
        if or_none is not None:
            allowed += f" or None ({or_none})" if or_none else " or None"
        raise error(f"{owner + ' ' if owner else ''}{name} must be {allowed}; got {value!r}.")
    return value


def check_optional_int(value: Any, name: str, *, none_means: str = "", **bounds: Any
                       ) -> int | None:
    """:func:`check_int` (``bounds``: its keywords) where None is allowed too
    (``none_means`` says what it means)."""
    return None if value is None else check_int(value, name, or_none=none_means, **bounds)
