"""Events into ``sq_events`` with one INSERT statement per chunk of rows.

``executemany`` steps its statement once per row and binds seven values from
Python for each; SQLite's own limit is far above that. Here a chunk's values
travel as ONE bound array (``apsw.carray``: a C array SQLite reads without
calling back into Python), its keys as one packed blob that ``substr`` slices
(constant time on a blob), and the other columns are constants of the
statement, so a chunk of 10,000 rows is one statement step.

Rows that do not fit that shape go in as multi-row ``VALUES`` of up to
``_ROWS_PER_VALUES`` rows (still one step per 64 rows): NULL or mixed-type
values in a chunk, more than one value type, headers, per-row timestamps,
keys of different lengths or kinds, and text holding a NUL character (a
carray of text is an array of C strings, which a NUL would cut short). One
row alone (a single publish) is one plain ``VALUES`` row.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import apsw

from spark_queue.store.file.carray import CHUNK, value_array

_ROWS_PER_VALUES = 64

_INSERT = "INSERT INTO sq_events (topic_id, offset, ts_ms, key, value, value_type, headers) "
_ROW = "(?, ?, ?, ?, ?, ?, ?)"
_ONE_ROW = _INSERT + "VALUES " + _ROW
_NONE = type(None)


def insert_events(
    conn: apsw.Connection,
    tid: int,
    first: int,
    values: Sequence[Any],
    value_types: int | Sequence[int],
    ts_ms: int | Sequence[int],
    keys: Sequence[str | bytes | None] | None = None,
    headers: Sequence[str | None] | None = None,
) -> int:
    """Insert stored-form rows at offsets ``first``, ``first + 1``, ... of topic ``tid``.

    ``value_types`` and ``ts_ms`` are one value for every row or one per row;
    ``keys`` and ``headers`` are None (all NULL) or one per row. Returns the
    end offset. Only :func:`~spark_queue.store.streams.event_log.write_events`
    calls this: it checks limits first and advances ``next_offset`` and the
    time marks after.
    """
    n = len(values)
    if n == 1:  # a single publish: a C array of one costs more to build than it saves
        conn.execute(_ONE_ROW, (
            tid, first, ts_ms if isinstance(ts_ms, int) else ts_ms[0],
            None if keys is None else keys[0], values[0],
            value_types if isinstance(value_types, int) else value_types[0],
            None if headers is None else headers[0],
        ))
        return first + 1
    for start in range(0, n, CHUNK):
        stop = min(n, start + CHUNK)
        _insert_chunk(
            conn, tid, first + start, values[start:stop],
            value_types if isinstance(value_types, int) else value_types[start:stop],
            ts_ms if isinstance(ts_ms, int) else ts_ms[start:stop],
            None if keys is None else keys[start:stop],
            None if headers is None else headers[start:stop],
        )
    return first + n


def _insert_chunk(
    conn: apsw.Connection, tid: int, first: int, values: Sequence[Any],
    value_types: int | Sequence[int], ts_ms: int | Sequence[int],
    keys: Sequence[Any] | None, headers: Sequence[Any] | None,
) -> None:
    packed = _packed(values, value_types, ts_ms, keys, headers)
    if packed is not None:
        sql, arrays = packed
        conn.execute(sql, (tid, first, ts_ms, value_types, *arrays))
        return
    n = len(values)
    vtypes = [value_types] * n if isinstance(value_types, int) else value_types
    stamps = [ts_ms] * n if isinstance(ts_ms, int) else ts_ms
    rows = zip(
        range(first, first + n), stamps, [None] * n if keys is None else keys, values, vtypes,
        [None] * n if headers is None else headers, strict=True,
    )
    params: list[Any] = []
    count = 0
    for row in rows:
        params += (tid, *row)
        count += 1
        if count == _ROWS_PER_VALUES:
            conn.execute(_values_insert(count), params)
            params, count = [], 0
    if count:
        conn.execute(_values_insert(count), params)


def _packed(
    values: Sequence[Any], value_types: int | Sequence[int], ts_ms: int | Sequence[int],
    keys: Sequence[Any] | None, headers: Sequence[Any] | None,
) -> tuple[str, tuple[object, ...]] | None:
    """The one-statement INSERT and its array parameters, or None if the chunk does not fit."""
    if not values or type(value_types) is not int or type(ts_ms) is not int:
        return None
    if headers is not None and set(map(type, headers)) != {_NONE}:
        return None
    array = value_array(values)
    if array is None:
        return None
    if keys is None:
        return _sql("NULL"), (array,)
    key_kinds = set(map(type, keys))
    if key_kinds == {_NONE}:
        return _sql("NULL"), (array,)
    if key_kinds == {str}:
        encoded = [key.encode("utf-8") for key in keys]
    elif key_kinds == {bytes}:
        encoded = list(keys)
    else:
        return None
    width = len(encoded[0])
    if any(len(key) != width for key in encoded):
        return None
    if width == 0:  # substr of an empty blob is NULL, not empty
        return _sql("''" if key_kinds == {str} else "x''"), (array,)
    # rowid counts the carray's elements from 1.
    key_sql = "substr(?6, rowid * ?7 - ?7 + 1, ?7)"
    if key_kinds == {str}:
        key_sql = f"CAST({key_sql} AS TEXT)"
    return _sql(key_sql), (array, b"".join(encoded), width)


@functools.cache
def _sql(key_sql: str) -> str:
    return (
        f"{_INSERT}SELECT ?1, ?2 + rowid - 1, ?3, {key_sql}, value, ?4, NULL FROM carray(?5)"
    )


@functools.cache
def _values_insert(rows: int) -> str:
    return _INSERT + "VALUES " + ", ".join([_ROW] * rows)
