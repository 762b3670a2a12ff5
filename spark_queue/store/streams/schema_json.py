"""A topic's schema as JSON Schema (draft 2020-12), for a Kafka side's registry.

The same rules as :mod:`~spark_queue.store.streams.schema_fields`' table, in JSON Schema's
words: a nullable field also takes ``null``, a NOT NULL one is ``required``, keys the schema
does not name are allowed, DATE and TIMESTAMP strings match the table's GLOBs as patterns.
One difference JSON Schema imposes: its ``integer`` takes ``1.0`` (a number with no
fraction), which the store refuses for an integer type.
"""

from __future__ import annotations

from typing import Any

from spark_queue.store.streams.schema_ddl import Field, SqlType, parse_schema
from spark_queue.store.streams.schema_rows import rule

_PATTERNS = {
    "date": "^[0-9]{4}-[0-1][0-9]-[0-3][0-9]$",
    "timestamp": r"^[0-9]{4}-[0-1][0-9]-[0-3][0-9]([T ][0-2][0-9]:[0-5][0-9]([:.Z+-][\s\S]*)?)?$",
}
_JSON_TYPES = {"text": "string", "integer": "integer", "real": "number", "true": "boolean",
               "false": "boolean", "array": "array", "object": "object"}


def json_schema(ddl: str, title: str) -> dict[str, Any]:
    """The JSON Schema document of ``ddl`` (a topic's schema), titled ``title``."""
    fields = parse_schema(ddl).fields
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title,
            **_object(fields)}


def _object(fields: tuple[Field, ...]) -> dict[str, Any]:
    document: dict[str, Any] = {
        "type": "object",
        "properties": {f.name: _field(f.type, f.nullable, f.comment) for f in fields},
    }
    required = [f.name for f in fields if not f.nullable]
    if required:
        document["required"] = required
    return document


def _field(sql_type: SqlType, nullable: bool, comment: str | None = None) -> dict[str, Any]:
    types, lo, hi, fmt, _ = rule(sql_type)
    names = sorted({_JSON_TYPES[t] for t in types.split()})
    if "number" in names and "integer" in names:
        names.remove("integer")  # JSON Schema's number includes its integers
    document: dict[str, Any] = {}
    if sql_type.name == "STRUCT":
        document.update(_object(sql_type.fields))
    elif sql_type.name == "ARRAY":
        assert sql_type.element is not None
        document.update(type="array", items=_field(sql_type.element, True))
    elif sql_type.name == "MAP":
        assert sql_type.element is not None
        document.update(type="object", additionalProperties=_field(sql_type.element, True))
    else:
        document["type"] = names[0] if len(names) == 1 else names
        if lo is not None:
            document.update(minimum=lo, maximum=hi)
        if fmt is not None:
            document["pattern"] = _PATTERNS[fmt]
    if nullable:
        kinds = document["type"] if isinstance(document["type"], list) else [document["type"]]
        document["type"] = [*kinds, "null"]
    if comment is not None:
        document["description"] = comment
    return document
