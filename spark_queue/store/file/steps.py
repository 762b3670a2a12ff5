"""Deletes of any size as many small write transactions (retention, dead-letter retention).

Each step is ONE write transaction that deletes at most :data:`STEP_ROWS` rows, and after
it the lock stays free for as long as the step held it (at least a few milliseconds): a
writer waiting in SQLite's busy handler, which sleeps and tries again, gets the lock
within a step or two, however large the backlog (docs/file-format.md, "The lock budget";
``tests/store/streams/test_retention_steps.py`` holds the bound).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import apsw

from spark_queue import defaults
from spark_queue.store.file.connection import StoreConnection

STEP_ROWS = defaults.MAINTENANCE_STEP_ROWS
_MIN_PAUSE_S = 0.005

#: Called inside each step's transaction before the step; False stops the work (a lost lease).
MayStep = Callable[[apsw.Connection], bool]


def in_steps(
    file: StoreConnection,
    step: Callable[[apsw.Connection, int], int],
    *,
    may_step: MayStep | None = None,
    step_rows: int = STEP_ROWS,
) -> int | None:
    """Run ``step(conn, step_rows)`` (rows deleted, at most ``step_rows``) in one write
    transaction each until a step deletes fewer; the rows deleted in all, or None when
    ``may_step`` stopped it (what earlier steps deleted stays deleted)."""
    total = 0
    while True:
        started = time.monotonic()
        with file.write() as conn:
            if may_step is not None and not may_step(conn):
                return None
            deleted = step(conn, step_rows)
        total += deleted
        if deleted < step_rows:
            return total
        time.sleep(max(time.monotonic() - started, _MIN_PAUSE_S))
