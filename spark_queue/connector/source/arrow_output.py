"""Turn the store's Arrow rows into the batches Spark expects (runs on executors).

Input is a table of :func:`spark_queue.store.streams.arrow_read.payload_schema`
(offset, timestamp_ms, key, value and, if asked, headers). Output is a
``pyarrow.RecordBatch`` whose schema equals exactly what Spark derives from
the query schema (Spark rejects any other), built column by column: no Python
object per row on the default path. The Kafka-shaped path uses no
``pyarrow.compute`` (its import costs 60-80 ms, which the stream's planning
process would pay before its first batch, read on the driver, reaches
``foreachBatch``: BENCHMARKS.md, "Stream start").
"""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING, Any

import pyarrow as pa

try:  # pyspark's Arrow paths bring it; pyarrow >= 16 no longer does
    import numpy as np
except ImportError:  # pragma: no cover - the timestamps fall back to pyarrow.compute
    np = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from spark_queue.connector.source.json_decode import JsonDecoder


def kafka_batch(table: pa.Table, topic: str, target: pa.Schema) -> pa.RecordBatch:
    """Kafka-shaped columns (key, value, topic, partition, offset, timestamp, ...)."""
    rows = table.num_rows
    zero = _scalar(pa.int32(), struct.pack("<i", 0))
    columns = {
        "key": table.column("key"),
        "value": table.column("value"),
        "topic": pa.repeat(_string_scalar(topic), rows),
        "partition": pa.repeat(zero, rows),
        "offset": table.column("offset"),
        "timestamp": _micros(table.column("timestamp_ms")),
        "timestampType": pa.repeat(zero, rows),
    }
    if "headers" in target.names:
        columns["headers"] = _headers(table.column("headers"), target.field("headers").type)
    arrays = []
    for field in target:
        column = columns[field.name]
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if column.type != field.type:
            column = column.cast(field.type)
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


# Constants built from their bytes, not from Python values: pa.scalar(0) makes
# pyarrow import pandas where it is installed (~175 ms), which the stream's planning
# process otherwise never needs before its first batch is read on the driver
# (BENCHMARKS.md, "Stream start"; tests/connector/source/test_arrow_output_imports.py).
def _scalar(kind: pa.DataType, little_endian: bytes) -> pa.Scalar:
    return pa.Array.from_buffers(kind, 1, [None, pa.py_buffer(little_endian)])[0]


def _micros(stamps_ms: pa.ChunkedArray) -> pa.Array:
    """Stored epoch ms (never null) -> Spark's UTC timestamps in µs, by one numpy multiply
    over the column's buffer (``Array.to_numpy`` would import pyarrow.compute and pandas)."""
    ms = stamps_ms.combine_chunks()
    if np is None:  # pragma: no cover - see the import
        import pyarrow.compute as pc

        return pc.multiply(ms, 1000).cast(pa.timestamp("us", tz="UTC"))
    values = np.frombuffer(ms.buffers()[1], dtype=np.int64, count=len(ms), offset=ms.offset * 8)
    return pa.Array.from_buffers(pa.timestamp("us", tz="UTC"), len(ms),
                                 [None, pa.py_buffer(values * 1000)])


def _string_scalar(text: str) -> pa.Scalar:
    data = text.encode()
    offsets = pa.py_buffer(struct.pack("<ii", 0, len(data)))
    return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])[0]


def _headers(stored: pa.ChunkedArray, header_type: pa.DataType) -> pa.Array:
    """Stored JSON objects -> Kafka's array<struct<key: string, value: binary>>, order kept."""
    lists: list[list[dict[str, Any]] | None] = []
    for text in stored.to_pylist():
        if text is None:
            lists.append(None)
        else:
            lists.append(
                [{"key": name, "value": value.encode()} for name, value in json.loads(text).items()]
            )
    return pa.array(lists, type=header_type)


def typed_batch(table: pa.Table, decoder: JsonDecoder) -> pa.RecordBatch:
    """JSON values decoded into the user's columns (see :mod:`json_decode`)."""
    values = table.column("value").combine_chunks()
    offsets = table.column("offset").combine_chunks()
    return decoder.decode(values, offsets)
