"""Which DataFrame columns the sink writes, and how: checked once, when the query starts.

``writer()``/``streamWriter()`` call :func:`plan_layout` with the DataFrame's
schema, so a schema the sink cannot write fails before any task runs, with a
message naming the column and what is allowed. The result, a
:class:`SinkLayout`, is plain picklable data the executors follow.

Column names match case-insensitively, as Spark resolves columns by default.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from spark_queue.connector.sink.sink_options import SinkOptions
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import SinkSchemaError
from spark_queue.store import BYTES, JSON, TEXT

__all__ = ["BYTES", "JSON", "TEXT", "JOB_COLUMNS", "SinkLayout", "plan_layout"]

#: Queue columns that become job properties: name -> what the column must be.
JOB_COLUMNS: dict[str, str] = {
    "priority": "integer",
    "delay_ms": "integer",
    "idempotency_key": "string",
    "max_attempts": "integer",
    "ttl_ms": "integer",
}
TOPIC_META_COLUMNS = ("topic", "key", "headers")

_INTEGERS = (ByteType, ShortType, IntegerType, LongType)
_JSON_SCALARS = (
    NullType,
    BooleanType,
    *_INTEGERS,
    FloatType,
    DoubleType,
    DecimalType,
    StringType,
    DateType,
    TimestampType,
    TimestampNTZType,
)
_JSON_ALLOWED = (
    "boolean, integer types, float, double, decimal, string, date, timestamp, "
    "timestamp_ntz, and arrays, structs and map<string, _> of those"
)


@dataclass(frozen=True, slots=True)
class SinkLayout:
    """How executors turn a DataFrame row into a stored event or job (picklable)."""

    target: str  # "topic" or "queue"
    value_type: int  # BYTES or TEXT: the value column's type; JSON: whole-row JSON
    value_column: str | None = None
    json_columns: tuple[str, ...] = ()
    route_column: str | None = None  # a `topic` column routing rows (no topic option)
    key_column: str | None = None
    headers_column: str | None = None
    headers_kind: str | None = None  # "map" or "array"
    job_columns: tuple[tuple[str, str], ...] = ()  # (job field, DataFrame column)


def plan_layout(schema: StructType, options: SinkOptions) -> SinkLayout:
    """Check ``schema`` against the sink's rules; SinkSchemaError names the column."""
    by_name: dict[str, tuple[str, DataType]] = {}
    for field in schema.fields:
        lowered = field.name.lower()
        if lowered in by_name:
            raise SinkSchemaError(
                f"{FORMAT_NAME} sink: columns {by_name[lowered][0]!r} and {field.name!r} differ "
                "only "
                "in case; rename one of them."
            )
        by_name[lowered] = (field.name, field.dataType)

    if options.target == "queue":
        return _queue_layout(schema, by_name)
    return _topic_layout(schema, by_name, options)


def _topic_layout(
    schema: StructType, by_name: dict[str, tuple[str, DataType]], options: SinkOptions
) -> SinkLayout:
    route = None
    if options.topic is None:
        if "topic" not in by_name:
            raise SinkSchemaError(
                f"{FORMAT_NAME} sink needs a destination: option 'topic' (publish), option 'queue' "
                "(enqueue), or a string column 'topic' naming each row's topic. The DataFrame "
                f"has columns {_names(schema)}."
            )
        name, dtype = by_name["topic"]
        if not isinstance(dtype, StringType):
            raise SinkSchemaError(
                f"{FORMAT_NAME} sink: column {name!r} routes rows to topics and must be string; "
                f"got {dtype.simpleString()}. Cast it, or set option 'topic'."
            )
        route = name
    key = None
    if "key" in by_name:
        name, dtype = by_name["key"]
        if not isinstance(dtype, (StringType, BinaryType)):
            raise SinkSchemaError(
                f"{FORMAT_NAME} sink: column {name!r} is the event key and must be string or "
                "binary; "
                f"got {dtype.simpleString()}. Cast it, e.g. col('{name}').cast('string')."
            )
        key = name
    headers, headers_kind = None, None
    if "headers" in by_name:
        name, dtype = by_name["headers"]
        headers, headers_kind = name, _headers_kind(name, dtype)
    value_column, value_type, json_columns = _payload(schema, by_name, TOPIC_META_COLUMNS)
    return SinkLayout(
        target="topic",
        value_type=value_type,
        value_column=value_column,
        json_columns=json_columns,
        route_column=route,
        key_column=key,
        headers_column=headers,
        headers_kind=headers_kind,
    )


def _queue_layout(schema: StructType, by_name: dict[str, tuple[str, DataType]]) -> SinkLayout:
    job_columns = []
    for field, kind in JOB_COLUMNS.items():
        if field not in by_name:
            continue
        name, dtype = by_name[field]
        ok = isinstance(dtype, _INTEGERS) if kind == "integer" else isinstance(dtype, StringType)
        if not ok:
            allowed = "tinyint, smallint, int or bigint" if kind == "integer" else "string"
            raise SinkSchemaError(
                f"{FORMAT_NAME} sink: queue column {name!r} sets the job's {field} and must be "
                f"{allowed}; got {dtype.simpleString()}. Cast it, or rename the column if it "
                "is payload data."
            )
        job_columns.append((field, name))
    value_column, value_type, json_columns = _payload(schema, by_name, tuple(JOB_COLUMNS))
    return SinkLayout(
        target="queue",
        value_type=value_type,
        value_column=value_column,
        json_columns=json_columns,
        job_columns=tuple(job_columns),
    )


def _payload(
    schema: StructType, by_name: dict[str, tuple[str, DataType]], reserved: tuple[str, ...]
) -> tuple[str | None, int, tuple[str, ...]]:
    """(value column, value_type, JSON columns): the `value` column, else the row as JSON."""
    if "value" in by_name:
        name, dtype = by_name["value"]
        if isinstance(dtype, StringType):
            return name, TEXT, ()
        if isinstance(dtype, BinaryType):
            return name, BYTES, ()
        raise SinkSchemaError(
            f"{FORMAT_NAME} sink: column {name!r} is the payload and must be string or binary; got "
            f"{dtype.simpleString()}. Cast it (e.g. to_json(col('{name}')) for a struct), or "
            "rename it to write the whole row as one JSON object."
        )
    columns = tuple(f.name for f in schema.fields if f.name.lower() not in reserved)
    if not columns:
        raise SinkSchemaError(
            f"{FORMAT_NAME} sink: no column to write. Give a string or binary 'value' column, or "
            f"data columns to write as one JSON object per row; the DataFrame has "
            f"{_names(schema)} (reserved here: {', '.join(reserved)})."
        )
    for field in schema.fields:
        if field.name in columns:
            _check_json(field.name, field.dataType)
    return None, JSON, columns


def _check_json(path: str, dtype: DataType) -> None:
    if isinstance(dtype, _JSON_SCALARS):
        return
    if isinstance(dtype, ArrayType):
        _check_json(f"{path}[]", dtype.elementType)
        return
    if isinstance(dtype, StructType):
        for field in dtype.fields:
            _check_json(f"{path}.{field.name}", field.dataType)
        return
    if isinstance(dtype, MapType):
        if not isinstance(dtype.keyType, StringType):
            raise SinkSchemaError(
                f"{FORMAT_NAME} sink: column {path!r} is {dtype.simpleString()}, which has no JSON "
                f"form: JSON object keys are strings. Cast the keys (transform_keys) or drop "
                f"the column. Allowed in a JSON row: {_JSON_ALLOWED}."
            )
        _check_json(f"{path}{{}}", dtype.valueType)
        return
    hint = " Encode it first, e.g. base64(col)." if isinstance(dtype, BinaryType) else ""
    raise SinkSchemaError(
        f"{FORMAT_NAME} sink: column {path!r} of type {dtype.simpleString()} cannot be written "
        "into "
        f"the row's JSON value.{hint} Allowed in a JSON row: {_JSON_ALLOWED}; or give a string "
        "or binary 'value' column."
    )


def _headers_kind(name: str, dtype: DataType) -> str:
    if (
        isinstance(dtype, MapType)
        and isinstance(dtype.keyType, StringType)
        and isinstance(dtype.valueType, StringType)
    ):
        return "map"
    if isinstance(dtype, ArrayType) and isinstance(dtype.elementType, StructType):
        fields = {f.name.lower(): f.dataType for f in dtype.elementType.fields}
        if (
            set(fields) == {"key", "value"}
            and isinstance(fields["key"], StringType)
            and isinstance(fields["value"], (StringType, BinaryType))
        ):
            return "array"
    raise SinkSchemaError(
        f"{FORMAT_NAME} sink: column {name!r} holds the event headers and must be "
        "map<string,string> or Kafka's array<struct<key:string,value:binary>> (value may be "
        f"string); got {dtype.simpleString()}."
    )


def _names(schema: StructType) -> str:
    return "[" + ", ".join(repr(f.name) for f in schema.fields) + "]"
