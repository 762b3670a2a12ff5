"""Many payloads bound as ONE parameter: SQLite's carray, through ``apsw.carray``.

``executemany`` steps its statement once per row and binds each value from
Python. ``INSERT ... SELECT ... FROM carray(?)`` takes a chunk's payloads as a
C array that SQLite reads without calling back into Python: one statement step
per chunk. Used by the topics' inserts
(:mod:`spark_queue.store.streams.packed_insert`) and the queues' enqueue
(:func:`spark_queue.store.queues.queue_jobs.enqueue_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

CHUNK = 10_000  # rows per statement: big enough to amortize, small enough to stay in cache


def value_array(values: Sequence[Any]) -> apsw.CArrayBinding | None:
    """``values`` as one carray binding, or None unless all are str (without NUL) or all bytes.

    A carray of text is an array of C strings, which a NUL would cut short.
    """
    kinds = set(map(type, values))
    if kinds == {str}:
        if "\x00" in "".join(values):
            return None
    elif kinds != {bytes}:
        return None
    return apsw.carray(tuple(values))
