"""Event columns packed into Arrow buffers inside SQLite, no Python object per row.

``csrc/arrow_columns.c`` (compiled by ``hatch_build.py`` for each machine type of
``columnar_builds.py``; this module loads the one it runs on) is a SQLite
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
from dataclasses import dataclass

import apsw
import pyarrow as pa

from spark_queue import defaults
from spark_queue.store.streams import columnar_builds

log = logging.getLogger("spark_queue.store")

HERE = os.path.dirname(os.path.abspath(__file__))
_ENTRY_POINT = "sqlite3_arrowcolumns_init"
_BUILD = columnar_builds.build_for_this_machine()
# This machine type's build, or None where no build serves it (the Python path).
LIBRARY = os.path.join(HERE, _BUILD.file_name) if _BUILD else None

# Connections that have the aggregate; weak, so a closed store is forgotten.
_loaded: weakref.WeakSet[apsw.Connection] = weakref.WeakSet()
_unavailable: list[str] = []  # why the extension cannot load here
_warned: list[bool] = []  # whether a read said so (once per process)


@dataclass(frozen=True)
class ReadPath:
    """Which read builds the Spark source's Arrow columns in this process, and why.

    ``compiled`` is True where the build for this machine type loaded; ``reason`` says
    why in one line (loaded, missing for this platform, failed to load: the error);
    ``builds`` names every build this install carries (platform tags)."""

    compiled: bool
    machine: str
    library: str | None
    reason: str
    builds: tuple[str, ...]

    def __str__(self) -> str:
        path = ("compiled (C)" if self.compiled
                else f"Python ({defaults.PYTHON_READ_SLOWER})")
        return f"read path: {path} on {self.machine}: {self.reason}"


def read_path() -> ReadPath:
    """This process's read path: loads the compiled reader into a memory database to
    find out (a store's own connection loads it the same way)."""
    conn = apsw.Connection(":memory:")
    try:
        compiled = load(conn, warn=False)
    finally:
        conn.close()
    builds = tuple(build.tag for build in columnar_builds.BUILDS
                   if os.path.exists(os.path.join(HERE, build.file_name)))
    machine = columnar_builds.machine_name()
    if compiled and _BUILD is not None:
        reason = f"the build for this platform ({_BUILD.tag}) loaded from {LIBRARY}"
    else:
        reason = _unavailable[0]
    return ReadPath(compiled, machine, LIBRARY, reason, builds)


def load(conn: apsw.Connection, warn: bool = True) -> bool:
    """Define ``sq_arrow_columns`` on ``conn``; False where the extension cannot
    load (no build for this machine type, not in this install, a big-endian machine,
    a failed load), after one warning per process naming why (none with ``warn=False``:
    :func:`read_path` reports it instead)."""
    if conn in _loaded:
        return True
    if not _unavailable:
        try:
            _load(conn)
        except (OSError, apsw.Error) as exc:
            _unavailable.append(str(exc))
        else:
            _loaded.add(conn)
            return True
    if warn and not _warned:
        _warned.append(True)
        log.warning("spark_queue: the compiled Arrow reader cannot load on %s (%s); range "
                    "reads build Arrow in Python, %s. `sqliteq doctor` says "
                    "which read path runs and why.", columnar_builds.machine_name(),
                    _unavailable[0], defaults.PYTHON_READ_SLOWER)
    return False


def _load(conn: apsw.Connection) -> None:
    if sys.byteorder != "little":
        raise OSError("missing for this platform: the packed buffers are little-endian, "
                      "this machine is not")
    if _BUILD is None or LIBRARY is None:
        raise OSError(
            "missing for this platform: spark-queue builds it for "
            + ", ".join(b.tag for b in columnar_builds.BUILDS))
    if not os.path.exists(LIBRARY):
        raise OSError(f"missing for this platform: this install has no {_BUILD.file_name} "
                      "(a wheel built with SPARK_QUEUE_ALLOW_PYTHON_READ=1, or a checkout "
                      "not built: `make install`)")
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 1)
    try:
        conn.load_extension(LIBRARY, _ENTRY_POINT)
    except apsw.Error as exc:
        raise OSError(f"failed to load {LIBRARY}: {exc}") from exc
    finally:
        conn.config(apsw.SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0)


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
