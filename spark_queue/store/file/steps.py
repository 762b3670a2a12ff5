"""Deletes of any size as many small write transactions (retention, dead-letter retention,
the TTL sweep).

Each step is ONE write transaction that deletes at most :data:`STEP_ROWS` rows and at most
:data:`STEP_BYTES` bytes of payloads (one larger row goes alone), and after it the lock
stays free for as long as the step held it (at least a few milliseconds): a writer
waiting in SQLite's busy handler, which sleeps and tries again, gets the lock within a
step or two, however large the backlog and however large its rows (docs/file-format.md,
"The lock budget"; ``tests/store/streams/test_retention_steps.py`` and
``tests/store/queues/test_queue.py`` hold both bounds). A row bound alone is not enough:
freeing a row's overflow pages costs about 3.5 ms per MB, so 10,000 rows of 1 MB held
the lock ~35 s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import apsw

from spark_queue import defaults
from spark_queue.store.file.connection import StoreConnection, one_row

STEP_ROWS = defaults.MAINTENANCE_STEP_ROWS
STEP_BYTES = defaults.MAINTENANCE_STEP_BYTES
_MIN_PAUSE_S = 0.005
# The first chunk of rows a step's size is summed over (then 4x, 16x, ...).
_FIRST_ROWS = 16

#: Called inside each step's transaction before the step; False stops the work (a lost lease).
MayStep = Callable[[apsw.Connection], bool]


class Budget(NamedTuple):
    """What one step may delete: ``rows`` rows and ``bytes`` bytes of payloads."""

    rows: int = STEP_ROWS
    bytes: int = STEP_BYTES


class Done(NamedTuple):
    """What one step did: rows deleted, and whether work is left for another step."""

    deleted: int
    more: bool


#: A step's bound unless a caller gives another (tests give smaller ones).
STEP = Budget()

#: One step: delete within the budget, in the caller's write transaction.
Step = Callable[[apsw.Connection, Budget], Done]


def in_steps(
    file: StoreConnection,
    step: Step,
    *,
    may_step: MayStep | None = None,
    budget: Budget = STEP,
) -> int | None:
    """Run ``step(conn, budget)`` in one write transaction each until it says no work is
    left; the rows deleted in all, or None when ``may_step`` stopped it (what earlier steps
    deleted stays deleted)."""
    total = 0
    while True:
        started = time.monotonic()
        with file.write() as conn:
            if may_step is not None and not may_step(conn):
                return None
            done = step(conn, budget)
        total += done.deleted
        if not done.more:
            return total
        time.sleep(max(time.monotonic() - started, _MIN_PAUSE_S))


def rows_within(conn: apsw.Connection, sizes_sql: str, params: tuple[Any, ...],
                budget: Budget) -> int:
    """How many of the rows ``sizes_sql`` lists (one column ``size``: each row's payload
    bytes, in the order the step deletes them; it ends with ``LIMIT ?``, which its last
    parameter binds, at most ``budget.rows``) one step deletes: those whose running total
    stays within ``budget.bytes``, the first always.

    Summed in SQL over chunks that grow fourfold from :data:`_FIRST_ROWS` rows, and the
    chunk that passes the budget walked to its first row past it: small rows cost a few
    aggregates, and large ones are read little beyond what the step deletes (reading a
    row's size reads its payload, about 0.25 ms per MB, a tenth of deleting it)."""
    *where, most = params
    done = running = 0
    chunk = _FIRST_ROWS
    while done < most:
        rows = min(chunk, most - done)
        window = (*where, rows, done)
        total, count = one_row(conn.execute(
            f"SELECT coalesce(sum(size), 0), count(*) FROM ({sizes_sql} OFFSET ?)", window))
        if running + total > budget.bytes:
            for (size,) in conn.execute(f"{sizes_sql} OFFSET ?", window):
                running += size
                if running > budget.bytes:
                    break
                done += 1
            return max(1, done)
        running += total
        done += count
        if count < rows:
            break
        chunk *= 4
    return done


def size_sql(*columns: str) -> str:
    """A row's payload bytes as SQL over ``columns`` (fixed names, never user text; NULL
    counts 0), for :func:`rows_within`. Name only columns stored before any column the
    size leaves out (``value``, not ``headers`` after it): reading a column past a large
    value walks the value's whole overflow chain (10,000 rows of 1 MB: 10 GB a step)."""
    return " + ".join(f"coalesce(octet_length({c}), 0)" for c in columns)
