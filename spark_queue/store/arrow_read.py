"""Bulk range reads as Arrow, the shape Spark and analytics tools consume.

SQLite converts key and value to the requested type (``CAST`` in SQL), so the
only Python work per row is SQLite's own tuple; columns are then built by
pyarrow in C. Values come back as stored bytes/text: JSON stays JSON text.
"""

from __future__ import annotations

from operator import itemgetter

import apsw
import pyarrow as pa

from spark_queue.errors import PayloadError
from spark_queue.store.topics import range_bounds, topic_id

# "binary": key and value as bytes (Kafka's shape); "string": as UTF-8 text.
PAYLOAD_FORMATS = ("binary", "string")

_RANGE_SQL = {
    fmt: f"SELECT offset, ts_ms, CAST(key AS {cast}), CAST(value AS {cast}), value_type, "
    "headers FROM sq_events WHERE topic_id = ? AND offset >= ? AND offset < ? ORDER BY offset"
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
) -> pa.Table:
    """Events ``[start, end)`` (at most ``limit``) as an Arrow table with :func:`event_schema`.

    ``headers`` is the stored JSON object text. Under ``"string"``, binary
    payloads that are not valid UTF-8 raise PayloadError naming the offset.
    """
    if payload_format not in PAYLOAD_FORMATS:
        raise ValueError(f"payload_format must be 'binary' or 'string'; got {payload_format!r}.")
    upper = range_bounds(start, end, limit)
    tid = topic_id(conn, topic)
    schema = event_schema(payload_format)
    try:
        rows = conn.execute(_RANGE_SQL[payload_format], (tid, start, upper)).fetchall()
    except UnicodeDecodeError as exc:
        raise PayloadError(
            f"topic {topic!r} holds a binary key or value in offsets [{start}, {upper}) that "
            f"is not valid UTF-8 ({exc}); read it as binary instead of string."
        ) from exc
    if not rows:
        return schema.empty_table()
    # One C-level pass per column; zip(*rows) over a large batch is ~3x slower.
    columns = [
        pa.array(list(map(itemgetter(i), rows)), type=field.type)
        for i, field in enumerate(schema)
    ]
    return pa.Table.from_arrays(columns, schema=schema)


_PAYLOAD_SQL = {
    (fmt, headers): f"SELECT ts_ms, CAST(key AS {cast}), CAST(value AS {cast})"
    + (", headers" if headers else "")
    + " FROM sq_events WHERE topic_id = ? AND offset >= ? AND offset < ? ORDER BY offset"
    for fmt, cast in (("binary", "BLOB"), ("string", "TEXT"))
    for headers in (False, True)
}


def payload_schema(payload_format: str = "binary", headers: bool = False) -> pa.Schema:
    fields = [f for f in event_schema(payload_format) if f.name != "value_type"]
    return pa.schema(fields if headers else fields[:-1])


def read_arrow_payloads(
    conn: apsw.Connection,
    topic: str,
    start: int,
    end: int,
    payload_format: str = "binary",
    headers: bool = False,
) -> pa.Table:
    """Events ``[start, end)`` as Arrow with :func:`payload_schema` (no ``value_type``).

    The bulk path of the Spark source: offsets are not fetched but computed
    from the first one, which is exact because offsets are dense and
    retention only removes a prefix; fewer Python objects per row make it
    about 1.5x faster than :func:`read_arrow`. Caller holds one snapshot
    (both statements must see the same rows).
    """
    if payload_format not in PAYLOAD_FORMATS:
        raise ValueError(f"payload_format must be 'binary' or 'string'; got {payload_format!r}.")
    upper = range_bounds(start, end, None)
    tid = topic_id(conn, topic)
    schema = payload_schema(payload_format, headers)
    first = conn.execute(
        "SELECT offset FROM sq_events WHERE topic_id = ? AND offset >= ? AND offset < ? "
        "ORDER BY offset LIMIT 1",
        (tid, start, upper),
    ).fetchone()
    if first is None:
        return schema.empty_table()
    try:
        rows = conn.execute(_PAYLOAD_SQL[payload_format, headers], (tid, start, upper)).fetchall()
    except UnicodeDecodeError as exc:
        raise PayloadError(
            f"topic {topic!r} holds a binary key or value in offsets [{start}, {upper}) that "
            f"is not valid UTF-8 ({exc}); read it as binary instead of string."
        ) from exc
    offsets = pa.array(range(first[0], first[0] + len(rows)), pa.int64())
    columns = [offsets] + [
        pa.array(list(map(itemgetter(i), rows)), type=field.type)
        for i, field in enumerate(list(schema)[1:])
    ]
    return pa.Table.from_arrays(columns, schema=schema)
