"""The one integer check: every public store method (and the worker's settings) passes its
integer arguments through :func:`check_int` before SQL sees them.

SQLite keeps 64-bit signed integers; apsw raises a bare ``OverflowError`` for anything
wider, and a negative count or duration means nothing. The message names the argument,
the allowed range and the value, in the one form every check shares.
"""

from __future__ import annotations

from typing import Any

from spark_queue.errors import ArgumentError, SparkQueueError

#: The largest integer SQLite (and so the store) can hold.
MAX_INT64 = 2**63 - 1


def describe_range(low: int | None, high: int | None) -> str:
    def show(bound: int) -> str:
        named = {MAX_INT64: "2**63 - 1", 2**62: "2**62", 2**62 - 1: "2**62 - 1",
                 1 - 2**62: "-(2**62 - 1)"}
        return named.get(bound, str(bound))

    if low is None and high is None:
        return "an integer"
    if high is None:
        return f"an integer >= {show(low)}" if low is not None else "an integer"
    if low is None:
        return f"an integer <= {show(high)}"
    return f"an integer from {show(low)} to {show(high)}"


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
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or (low is not None and value < low)
        or (high is not None and value > high)
    ):
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
