"""Which JSON values each Spark type accepts, decided once: a schema flattened into rows.

A schema is flattened into :class:`FieldRow` rows (stored in ``sq_schema_fields``): a JSON
path, the JSON types allowed there (SQLite's ``json_type`` names), a range for numbers, a
GLOB format for strings, and whether a value is required. The ``sq_publish`` trigger
(store/file/publish_view.py) reads the stored rows with ``json_type``/``json_extract``; the
Python writers check with :class:`~spark_queue.store.streams.schema_fields.ValueCheck`,
compiled from the same rows. The table (docs/schemas.md, "Which JSON values each type
accepts"):

==========  ==================================  ============================================
type        JSON types                          and
==========  ==================================  ============================================
STRING      string                              (a number is refused, though Spark reads it)
BOOLEAN     true, false
TINYINT     integer                             -128 .. 127 (SMALLINT, INT, BIGINT: theirs)
FLOAT       integer, real                       DOUBLE the same
DECIMAL     integer, real                       within +-(10^(p-s) - 10^-s)
DATE        string                              ``YYYY-MM-DD``
TIMESTAMP   string, integer                     ISO-8601 date[time]; integer: epoch seconds
STRUCT      object                              its fields checked in turn; extra keys allowed
ARRAY       array                               each element checked; elements may be null
MAP         object                              each value checked; values may be null
==========  ==================================  ============================================

null, or a missing key, passes unless the field is NOT NULL (a NOT NULL field inside a
struct is required only when the struct is present). The value must be a JSON object; a
NULL value (a tombstone) passes. An ARRAY or MAP inside another ARRAY's or MAP's elements
is refused at ``schema set``: one ``json_each`` level is what the trigger walks.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from spark_queue.errors import SchemaDdlError
from spark_queue.store.streams.schema_ddl import Field, Schema, SqlType

_DAY = "[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]"
_HM = "[T ][0-2][0-9]:[0-5][0-9]"
#: (format, GLOB) rows: a string of that format matches one of its patterns. The same rows
#: are in schema version 14's sq_schema_formats (tests/store/streams/test_schema_fields.py).
FORMATS: tuple[tuple[str, str], ...] = (
    ("date", _DAY),
    ("timestamp", _DAY),
    ("timestamp", _DAY + _HM),
    ("timestamp", _DAY + _HM + "[:.Z+-]*"),
)

_INTEGERS = {"TINYINT": 7, "SMALLINT": 15, "INT": 31, "BIGINT": 63}
# Spark reads a JSON integer for a TIMESTAMP as epoch seconds, in microseconds as a long.
_EPOCH_S = 9223372036854


class FieldRow(NamedTuple):
    """One checked place in a value (a row of ``sq_schema_fields``)."""

    seq: int
    label: str  # the field as messages name it: site.zone, tags[], readings[].value
    container: str | None  # an ARRAY/MAP whose elements ``path`` is relative to, or None
    container_type: str | None  # 'array' or 'object'
    path: str  # a JSON path: from the value's root, or from each element ('$')
    parent: str  # the object whose presence makes ``required`` apply
    types: str  # allowed json_type() names, space-separated
    lo: int | float | None
    hi: int | float | None
    format: str | None
    required: int
    expects: str  # the type and its rule, for messages


def rule(sql_type: SqlType) -> tuple[str, Any, Any, str | None, str]:
    """(types, lo, hi, format, expects) of one type: the table above, in code."""
    name = sql_type.name
    if name in _INTEGERS:
        top = 2 ** _INTEGERS[name]
        return "integer", -top, top - 1, None, f"{name} (a JSON integer from {-top} to {top - 1})"
    if name in ("FLOAT", "DOUBLE"):
        return "integer real", None, None, None, f"{name} (a JSON number)"
    if name == "DECIMAL":
        p, s = sql_type.precision, sql_type.scale
        top = float(10 ** (p - s) - 10 ** -s) if s else 10 ** p - 1
        return ("integer real", -top, top, None,
                f"{sql_type.ddl()} (a JSON number from {-top} to {top})")
    if name == "DATE":
        return "text", None, None, "date", "DATE (a JSON string YYYY-MM-DD)"
    if name == "TIMESTAMP":
        return ("text integer", -_EPOCH_S, _EPOCH_S, "timestamp",
                "TIMESTAMP (an ISO-8601 JSON string such as 2024-05-01T12:00:00Z, or a JSON "
                "integer of epoch seconds)")
    if name == "STRING":
        return "text", None, None, None, "STRING (a JSON string)"
    if name == "BOOLEAN":
        return "true false", None, None, None, "BOOLEAN (JSON true or false)"
    if name == "STRUCT":
        return "object", None, None, None, "STRUCT (a JSON object)"
    if name == "ARRAY":
        return "array", None, None, None, f"{sql_type.ddl()} (a JSON array)"
    return "object", None, None, None, f"{sql_type.ddl()} (a JSON object)"


def flatten(schema: Schema) -> list[FieldRow]:
    """The rows of ``schema``, in the order they are checked; SchemaDdlError for an ARRAY or
    MAP nested inside another's elements."""
    rows: list[FieldRow] = []

    def add(label: str, container: str | None, ctype: str | None, path: str, parent: str,
            sql_type: SqlType, required: bool) -> None:
        types, lo, hi, fmt, expects = rule(sql_type)
        rows.append(FieldRow(len(rows), label, container, ctype, path, parent, types, lo, hi,
                             fmt, int(required), expects))
        if sql_type.name == "STRUCT":
            for field in sql_type.fields:
                walk(field, label, container, ctype, path)
        elif sql_type.name in ("ARRAY", "MAP"):
            if container is not None:
                raise SchemaDdlError(
                    f"topic schema: {label} is a {sql_type.name} inside the elements of another "
                    "ARRAY or MAP; a topic's schema checks one level of elements. Declare the "
                    "inner one as a STRING holding JSON text, or flatten it.")
            assert sql_type.element is not None
            add(label + "[]", path, "array" if sql_type.name == "ARRAY" else "object", "$",
                "$", sql_type.element, False)

    def walk(field: Field, prefix: str, container: str | None, ctype: str | None,
             at: str) -> None:
        label = f"{prefix}.{field.name}" if prefix else field.name
        add(label, container, ctype, f"{at}.{field.name}", at, field.type, not field.nullable)

    for field in schema.fields:
        walk(field, "", None, None, "$")
    return rows
