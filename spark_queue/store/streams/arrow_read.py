"""Bulk range reads as Arrow, the shape Spark and analytics tools consume.

SQLite converts key and value to the requested type (``CAST`` in SQL). The
Spark source's read (:func:`read_arrow_payloads`) has SQLite pack the columns
into Arrow buffers in C (:mod:`columnar`); otherwise the only Python work per
row is SQLite's own tuple, and pyarrow builds the columns from those. Values
come back as stored bytes/text: JSON stays JSON text.
"""

from __future__ import annotations

from operator import itemgetter
from types import ModuleType

import apsw
import pyarrow as pa

from spark_queue.errors import CorruptStoreError, OptionError, PayloadError
from spark_queue.store.file.codec import check_headers
from spark_queue.store.streams import columnar
from spark_queue.store.streams.topic_reads import (
    expected_range,
    offsets_are_unique,
    offsets_message,
    range_bounds,
    topic_id,
)

# "binary": key and value as bytes (Kafka's shape); "string": as UTF-8 text.
PAYLOAD_FORMATS = ("binary", "string")

# key_type: 1 for a TEXT key, 0 for a BLOB or NULL one (value_type's numbers): the cast
# hides it, and an exported key must come back as the type it was stored as.
_RANGE_SQL = {
    fmt: f"SELECT offset, ts_ms, CAST(key AS {cast}), CAST(value AS {cast}), value_type, "
    "typeof(key) = 'text', headers FROM sq_events "
    "WHERE topic_id = ? AND offset >= ? AND offset < ? ORDER BY offset"
    for fmt, cast in (("binary", "BLOB"), ("string", "TEXT"))
}


def event_schema(payload_format: str = "binary") -> pa.Schema:
    payload = pa.binary() if payload_format == "binary" else pa.string()
    return pa.schema(
        [
            pa.field("offset", pa.int64(), nullable=False),
            pa.field("timestamp_ms", pa.int64(), nullable=False),
            pa.field("key", payload),
            pa.field("value", payload),
            pa.field("value_type", pa.int8(), nullable=False),
            pa.field("key_type", pa.int8(), nullable=False),
            pa.field("headers", pa.string()),
        ]
    )


def read_arrow(
    conn: apsw.Connection,
    topic: str,
    start: int,
    end: int | None = None,
    limit: int | None = None,
    payload_format: str = "binary",
    *,
    capped: bool = True,
) -> pa.Table:
    """Events ``[start, end)`` (at most ``limit``) as an Arrow table with :func:`event_schema`.

    ``headers`` is the stored JSON object text, checked to be an object of
    strings. Under ``"string"``, binary payloads that are not valid UTF-8
    raise PayloadError naming the offsets. Offsets are verified as in
    :func:`read_arrow_payloads`; caller holds one snapshot. ``capped``: as
    :func:`~spark_queue.store.streams.topic_reads.expected_range`'s.
    """
    _check_format(payload_format)
    upper = range_bounds(start, end, limit)
    tid = topic_id(conn, topic)
    schema = event_schema(payload_format)
    first, stop = expected_range(conn, tid, start, upper, capped=capped)
    rows = _fetch(conn, topic, _RANGE_SQL[payload_format], tid, start, stop)
    columns = _columns(rows, schema)
    verify_offsets(topic, columns[0], first, stop)
    if not rows:
        return schema.empty_table()
    _verify_headers(topic, columns[0], columns[-1])
    return pa.Table.from_arrays(columns, schema=schema)


_PAYLOAD_SQL = {
    (fmt, headers): f"SELECT ts_ms, CAST(key AS {cast}), CAST(value AS {cast})"
    + (", headers" if headers else "")
    + " FROM sq_events WHERE topic_id = ? AND offset >= ? AND offset < ? ORDER BY offset"
    for fmt, cast in (("binary", "BLOB"), ("string", "TEXT"))
    for headers in (False, True)
}


def payload_schema(payload_format: str = "binary", headers: bool = False) -> pa.Schema:
    fields = [f for f in event_schema(payload_format) if f.name not in ("value_type", "key_type")]
    return pa.schema(fields if headers else fields[:-1])


def read_arrow_payloads(
    conn: apsw.Connection,
    topic: str,
    start: int,
    end: int,
    payload_format: str = "binary",
    headers: bool = False,
) -> pa.Table:
    """Events ``[start, end)`` as Arrow with :func:`payload_schema` (no payload types).

    The bulk path of the Spark source, verified without fetching an offset
    per row: the rows come from the primary key ``(topic_id, offset)`` in
    order, so they are distinct and rising, and a count equal to the width of
    :func:`~spark_queue.store.streams.topic_reads.expected_range` proves them dense; the
    offsets column is then built in C. A hole, or a table a foreign writer
    rebuilt without that key (where duplicates could hide a hole), is a
    CorruptStoreError naming topic and offsets, never a renumbered row.
    Where the compiled reader loads, the columns are packed in C, which also
    checks each row's offset; any doubt leaves the read to the rows path.
    Caller holds one snapshot (the bounds and the rows must agree).
    """
    _check_format(payload_format)
    upper = range_bounds(start, end, None)
    tid = topic_id(conn, topic)
    schema = payload_schema(payload_format, headers)
    first, stop = expected_range(conn, tid, start, upper)
    columns = _packed_columns(conn, tid, start, first, stop, schema, headers)
    if columns is None:
        rows = _fetch(conn, topic, _PAYLOAD_SQL[payload_format, headers], tid, start, stop)
        if len(rows) != stop - first or not offsets_are_unique(conn):
            _raise_not_dense(conn, topic, tid, start, first, stop)
        if not rows:
            return schema.empty_table()
        offsets = _compute().cumulative_sum(
            pa.repeat(pa.scalar(1, pa.int64()), stop - first), start=first - 1
        )
        columns = [offsets, *_columns(rows, pa.schema(list(schema)[1:]))]
    if headers:
        _verify_headers(topic, columns[0], columns[-1])
    return pa.Table.from_arrays(columns, schema=schema)


# The same rows packed into Arrow buffers by the compiled aggregate (columnar.py):
# kinds 'b'/'t' say the SQLite type each payload column must have (CAST makes it
# so; stored headers are TEXT), anything else leaves the read to the rows above.
_PACKED_SQL = {
    (fmt, headers): f"SELECT sq_arrow_columns(?, ?, ?, offset, ts_ms, CAST(key AS {cast}), "
    f"CAST(value AS {cast})" + (", headers" if headers else "")
    + ") FROM sq_events WHERE topic_id = ? AND offset >= ? AND offset < ?"
    for fmt, cast in (("binary", "BLOB"), ("string", "TEXT"))
    for headers in (False, True)
}


def _packed_columns(
    conn: apsw.Connection,
    tid: int,
    start: int,
    first: int,
    stop: int,
    schema: pa.Schema,
    headers: bool,
) -> list[pa.Array] | None:
    """The columns of :func:`payload_schema` for ``[first, stop)``, built in C,
    or None: nothing to read, no compiled reader, or rows the aggregate leaves to the
    Python path (out of order, a hole, an unexpected type, text that is not UTF-8), which
    returns them or names the fault exactly as before."""
    if stop <= first or not columnar.load(conn):
        return None
    payload = schema.field("value").type
    kinds = ("t" if payload == pa.string() else "b") * 2 + ("t" if headers else "")
    sql = _PACKED_SQL["string" if payload == pa.string() else "binary", headers]
    try:
        blob = conn.execute(sql, (kinds, first, stop - first, tid, start, stop)).fetchall()[0][0]
    except apsw.TooBigError:
        return None  # over SQLite's 1 GB value limit: the rows path has none
    if not isinstance(blob, bytes):
        return None  # NULL: rows the aggregate left to the rows path
    arrays = columnar.decode(blob, [f.type for f in list(schema)[2:]])
    if len(arrays[0]) != stop - first or not offsets_are_unique(conn):
        return None
    try:
        for array in arrays[2:]:
            if array.type == pa.string():
                array.validate(full=True)  # UTF-8, as apsw's decode checked it
    except pa.ArrowInvalid:
        return None
    return arrays


def _compute() -> ModuleType:
    # Imported at the first read, not with the store: pyarrow.compute is half the
    # store's import (~60 ms), which a Spark query's planning process pays before its
    # first trigger when it opens the store only for offsets (BENCHMARKS.md,
    # "Stream start").
    import pyarrow.compute

    return pyarrow.compute


def _raise_not_dense(
    conn: apsw.Connection, topic: str, tid: int, start: int, first: int, stop: int
) -> None:
    offsets = [
        row[0] for row in conn.execute(
            "SELECT offset FROM sq_events WHERE topic_id = ? AND offset >= ? AND offset < ? "
            "ORDER BY offset", (tid, start, stop),
        )
    ]
    if offsets != list(range(first, stop)):
        raise CorruptStoreError(offsets_message(topic, offsets, first, stop))
    raise CorruptStoreError(
        f"topic {topic!r}: table sq_events has lost its primary key (topic_id, offset), so "
        "offsets are no longer known to be unique; another SQLite client rebuilt the table. "
        "Nothing was read; restore a backup."
    )


def _check_format(payload_format: str) -> None:
    if payload_format not in PAYLOAD_FORMATS:
        raise OptionError(
            f"payload_format must be 'binary' or 'string'; got {payload_format!r}."
        )


def _fetch(
    conn: apsw.Connection, topic: str, sql: str, tid: int, start: int, upper: int
) -> list[apsw.SQLiteValues]:
    try:
        return conn.execute(sql, (tid, start, upper)).fetchall()
    except UnicodeDecodeError as exc:
        raise PayloadError(
            f"topic {topic!r} holds a binary key or value in offsets [{start}, {upper}) that "
            f"is not valid UTF-8 ({exc}); read it as binary instead of string."
        ) from exc


def _columns(rows: list[apsw.SQLiteValues], schema: pa.Schema) -> list[pa.Array]:
    # One C-level pass per column; zip(*rows) over a large batch is ~3x slower.
    return [
        pa.array(list(map(itemgetter(i), rows)), type=field.type)
        for i, field in enumerate(schema)
    ]


def verify_offsets(topic: str, offsets: pa.Array, first: int, end: int) -> None:
    """Raise CorruptStoreError unless ``offsets`` is exactly ``first, first+1, ..., end-1``.

    Vectorized: the count, the two ends, and every step being +1 (which
    rules out holes, duplicates and disorder alike) are checked in C.
    """
    pc = _compute()
    n = len(offsets)
    if n == end - first and (
        n == 0
        or (
            offsets[0].as_py() == first
            and offsets[n - 1].as_py() == end - 1
            and (n == 1 or pc.all(pc.equal(pc.subtract(offsets[1:], offsets[:-1]), 1)).as_py())
        )
    ):
        return
    raise CorruptStoreError(offsets_message(topic, offsets.to_pylist(), first, end))


def _verify_headers(topic: str, offsets: pa.Array, stored: pa.Array) -> None:
    # Most events share a few header sets: each distinct text is parsed once.
    pc = _compute()
    distinct = pc.unique(stored.drop_null()).to_pylist()
    for text in distinct:
        try:
            check_headers(text)
        except CorruptStoreError as exc:
            where = pc.index(stored, text).as_py()
            raise CorruptStoreError(
                f"topic {topic!r} offset {offsets[where].as_py()}: {exc}. A writer outside "
                "spark_queue stored them; headers must be NULL or a JSON object of strings."
            ) from exc
