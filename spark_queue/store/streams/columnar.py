"""Event columns packed into Arrow buffers inside SQLite, no Python object per row.

``csrc/arrow_columns.c`` (compiled at install by ``hatch_build.py``) is a SQLite
extension defining the aggregate ``sq_arrow_columns``: it appends each row's
timestamp and payload bytes to Arrow buffers in C and returns them as one
BLOB, which :func:`decode` slices into arrays without copying. Turning apsw's
row tuples into Arrow cost ~1 µs a row in Python, the bound of the Spark
source's read (BENCHMARKS.md, "Spark source").

The extension is loaded into the store's own apsw connection and calls SQLite
only through that connection's routines: no second SQLite library enters the
process (closing one would drop apsw's POSIX locks on the file;
``tests/store/streams/test_columnar_read.py`` checks the process maps none). Loading
is enabled for the C call alone, never for SQL's ``load_extension()``.
"""

from __future__ import annotations

import logging
import os
import struct
import sys
import weakref
from collections.abc import Sequence

import apsw
import pyarrow as pa

log = logging.getLogger("spark_queue.store")

LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_arrow_columns.so")
_ENTRY_POINT = "sqlite3_arrowcolumns_init"

# Connections that have the aggregate; weak, so a closed store is forgotten.
_loaded: weakref.WeakSet[apsw.Connection] = weakref.WeakSet()
_unavailable: list[str] = []  # why the extension cannot load here (said once)


def load(conn: apsw.Connection) -> bool:
    """Define ``sq_arrow_columns`` on ``conn``; False where the extension cannot
    load (not built, a big-endian machine), after one warning naming why."""
    if conn in _loaded:
        return True
    if _unavailable:
        return False
    try:
        if sys.byteorder != "little":
            raise OSError("the packed buffers are little-endian, this machine is not")
        conn.config(apsw.SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 1)
        try:
            conn.load_extension(LIBRARY, _ENTRY_POINT)
        finally:
            conn.config(apsw.SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0)
    except (OSError, apsw.Error) as exc:
        _unavailable.append(str(exc))
        log.warning("spark_queue: the compiled Arrow reader %s cannot load (%s); range "
                    "reads build Arrow in Python, ~2-3x slower. Build spark-queue on this "
                    "machine type (with a C compiler) to use it.", LIBRARY, exc)
        return False
    _loaded.add(conn)
    return True


def decode(blob: bytes, types: Sequence[pa.DataType]) -> list[pa.Array]:
    """The packed BLOB as ``[offset int64, ts_ms int64, *columns]`` of ``types`` (binary
    or string), sharing its memory. Layout: the header comment of ``csrc/arrow_columns.c``
    (sections anywhere, described by a trailer of int64 words at the end).
    Built from buffers, never from Python values: converting one makes pyarrow import
    pandas where it is installed (~175 ms in a fresh Spark planning process)."""
    (words,) = struct.unpack_from("<q", blob, len(blob) - 8)
    trailer = struct.unpack_from(f"<{words}q", blob, len(blob) - 8 * words)
    n, ncols, offset_at, ts_at = trailer[:4]
    if ncols != len(types) or words != 4 + 5 * ncols + 1:
        raise ValueError(f"sq_arrow_columns packed {ncols} columns, expected {len(types)}")
    buffer = pa.py_buffer(blob)
    arrays = [
        pa.Array.from_buffers(pa.int64(), n, [None, buffer.slice(at, 8 * n)])
        for at in (offset_at, ts_at)
    ]
    for index, kind in enumerate(types):
        nulls, data_bytes, valid_at, offsets_at, data_at = trailer[4 + 5 * index: 9 + 5 * index]
        validity = buffer.slice(valid_at, (n + 7) // 8) if nulls else None
        offsets = buffer.slice(offsets_at, 4 * (n + 1))
        data = buffer.slice(data_at, data_bytes)
        arrays.append(pa.Array.from_buffers(kind, n, [validity, offsets, data], null_count=nulls))
    return arrays
