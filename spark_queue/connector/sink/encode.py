"""Executor side of the sink: turn Spark's Arrow batches into the store's encoded columns.

Runs in the executors' Python workers (``write()``), so the per-row work of
encoding (JSON rows, headers) is spread over the cluster and the driver's
commit only zips ready columns into SQLite. Imports pyarrow, not pyspark.

Encoded batch columns (only those the layout uses):

- topic target: ``topic`` (routing), ``key``, ``value``, ``headers`` (JSON object text)
- queue target: ``value`` and the job columns ``priority``, ``delay_ms``,
  ``idempotency_key``, ``max_attempts``, ``ttl_ms`` (integers as int64)

JSON rows follow Spark's ``to_json`` where JSON has a choice: dates and
timestamps as ISO-8601 text, NaN and infinities as the strings ``"NaN"``,
``"Infinity"``, ``"-Infinity"``; null fields are kept as ``null``; decimals
become strings so no digit is lost.
"""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spark_queue.connector.sink.sink_schema import SinkLayout
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import PayloadError
from spark_queue.store import JSON

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode

Converter = Callable[[Any], Any]


def encode_batch(batch: pa.RecordBatch, layout: SinkLayout,
                 objects: list[Any] | None = None) -> pa.RecordBatch:
    """The store-shaped columns for ``batch`` under ``layout``; JSON rows' dicts, as encoded,
    appended to ``objects`` when given (the topic's schema check reads them as given)."""
    names: list[str] = []
    arrays: list[pa.Array] = []
    if layout.route_column is not None:
        names.append("topic")
        arrays.append(batch.column(layout.route_column))
    if layout.key_column is not None:
        names.append("key")
        arrays.append(batch.column(layout.key_column))
    names.append("value")
    if layout.value_type == JSON:
        arrays.append(json_rows(batch, layout.json_columns, objects))
    else:
        arrays.append(batch.column(layout.value_column))
    if layout.headers_column is not None:
        names.append("headers")
        headers = layout.headers_column
        arrays.append(encode_header_column(batch.column(headers), headers))
    for field, column in layout.job_columns:
        names.append(field)
        array = batch.column(column)
        arrays.append(array if field == "idempotency_key" else pc.cast(array, pa.int64()))
    return pa.RecordBatch.from_arrays(arrays, names=names)


def json_rows(batch: pa.RecordBatch, columns: Iterable[str],
              objects: list[Any] | None = None) -> pa.Array:
    """One compact JSON object per row over ``columns``, as a string array (each row's dict
    appended to ``objects`` when given)."""
    names = list(columns)
    values = []
    for name in names:
        array = batch.column(name)
        column = array.to_pylist()
        convert = converter(array.type)
        if convert is not None:
            column = [None if v is None else convert(v) for v in column]
        values.append(column)
    rows = [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]
    if objects is not None:
        objects += rows
    try:
        return pa.array([_dumps(row) for row in rows], type=pa.string())
    except (TypeError, ValueError) as exc:  # a converter gap; the schema check should prevent it
        raise PayloadError(
            f"{FORMAT_NAME} sink: a row of columns {names} is not JSON: {exc}"
        ) from exc


def converter(dtype: pa.DataType) -> Converter | None:
    """A function making a non-null Arrow value JSON-ready; None if ``to_pylist`` already is."""
    if pa.types.is_floating(dtype):
        return _float
    if pa.types.is_decimal(dtype):
        return _decimal
    if pa.types.is_temporal(dtype):
        return _isoformat
    if pa.types.is_map(dtype):
        item = converter(dtype.item_type)
        if item is None:
            return dict
        return lambda v: {k: None if x is None else item(x) for k, x in v}
    if (
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
    ):
        element = converter(dtype.value_type)
        if element is None:
            return None
        return lambda v: [None if x is None else element(x) for x in v]
    if pa.types.is_struct(dtype):
        fields = [
            (dtype.field(i).name, converter(dtype.field(i).type)) for i in range(dtype.num_fields)
        ]
        if all(c is None for _, c in fields):
            return None
        return lambda v: {
            name: (v[name] if c is None or v[name] is None else c(v[name])) for name, c in fields
        }
    return None


def _float(v: float) -> Any:
    if math.isfinite(v):
        return v
    if v != v:
        return "NaN"
    return "Infinity" if v > 0 else "-Infinity"


def _decimal(v: Any) -> str:
    return format(v, "f")


def _isoformat(v: datetime.date | datetime.time) -> str:
    return v.isoformat()


def encode_header_column(array: pa.Array, column: str) -> pa.Array:
    """Headers (map<string,string> or Kafka's array<struct<key,value>>) as JSON object text.

    The store keeps a row's headers as one JSON object of text values, so a
    header it cannot hold exactly (a key given twice, a null key or value, a
    binary value that is not UTF-8) fails the batch naming the key and the
    row: no header is ever dropped or changed silently.
    """
    out: list[str | None] = []
    for row, entry in enumerate(array.to_pylist()):
        if not entry:
            out.append(None)
            continue
        headers: dict[str, str] = {}
        for item in entry:
            name, value = (item["key"], item["value"]) if isinstance(item, dict) else item
            if name is None or value is None:
                raise _refuse(
                    column, row, entry, name,
                    "has a null name or value; the store keeps header values as text. "
                    "Filter such headers out, or coalesce them, first.",
                )
            if isinstance(value, bytes):
                try:
                    value = value.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise _refuse(
                        column, row, entry, name,
                        "is binary but not UTF-8; the store keeps header values as text. "
                        "Encode it (e.g. base64) first.",
                    ) from exc
            if name in headers:
                raise _refuse(
                    column, row, entry, name,
                    "appears more than once; the store keeps one value per header key, and "
                    "keeping only one would drop the others. Merge the values, or give each "
                    "its own key, first.",
                )
            headers[name] = value
        out.append(_dumps(headers))
    return pa.array(out, type=pa.string())


def _refuse(
    column: str, row: int, entry: list[Any], name: object, problem: str
) -> PayloadError:
    shown = [
        (item["key"], item["value"]) if isinstance(item, dict) else tuple(item) for item in entry
    ]
    return PayloadError(
        f"{FORMAT_NAME} sink: header {name!r} in column {column!r} of row {row} of the task's "
        f"batch (headers {shown!r}) {problem} Nothing of this batch was written."
    )
