"""The source's output schemas: Kafka's shape by default, or the user's typed columns.

The default schema matches Spark's Kafka source (``key``, ``value``,
``topic``, ``partition``, ``offset``, ``timestamp``, ``timestampType`` and,
with ``includeHeaders``, ``headers``) so a pipeline can swap
``format("kafka")`` for ``format("sqliteq")``. Any other schema given with
``.schema(...)`` means "decode each JSON value into these columns".
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import OptionError

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def _payload_type(fmt: str) -> BinaryType | StringType:
    return BinaryType() if fmt == "binary" else StringType()


def default_schema(options: SourceOptions) -> StructType:
    """The Kafka-shaped schema for these options (key/value format, headers)."""
    fields = [
        StructField("key", _payload_type(options.key_format)),
        StructField("value", _payload_type(options.value_format)),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if options.include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def is_typed(schema: StructType, options: SourceOptions) -> bool:
    """True when ``schema`` is a user schema to decode JSON values into (not Kafka's shape)."""
    return schema != default_schema(options)


def check_user_schema(schema: StructType, options: SourceOptions) -> None:
    """Validate a typed-read schema on the driver (the corrupt-record column must be a string)."""
    if not is_typed(schema, options):
        return
    if not schema.fields:
        raise OptionError(f"{FORMAT_NAME} source: the user schema has no columns.")
    name = options.corrupt_record_column
    if name in schema.fieldNames():
        field = schema[name]
        if not isinstance(field.dataType, StringType):
            raise OptionError(
                f"{FORMAT_NAME} option 'columnNameOfCorruptRecord' names column {name!r}, which "
                f"must be STRING in the user schema; got {field.dataType.simpleString()}."
            )
