"""A topic's schema as Spark DDL: the subset a topic may declare, parsed without pyspark.

``'device STRING NOT NULL, temp DOUBLE, site STRUCT<id: INT, zone: STRING>, tags ARRAY<STRING>'``
is the string readers already pass to ``.schema(...)``. The types (case-insensitive, Spark's
aliases in brackets): STRING, BOOLEAN, TINYINT (BYTE), SMALLINT (SHORT), INT (INTEGER),
BIGINT (LONG), FLOAT (REAL), DOUBLE, DECIMAL(p, s) (DEC, NUMERIC; DECIMAL alone is (10, 0)),
DATE, TIMESTAMP, STRUCT<name: T, ...>, ARRAY<T> and MAP<STRING, T>; a field may say
``NOT NULL`` and ``COMMENT '...'``. Field names are letters, digits and ``_`` (a backquoted
name too), so a name is a JSON path step as it stands. Which JSON values each type accepts is
:mod:`~spark_queue.store.streams.schema_fields`' table (docs/schemas.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spark_queue.errors import SchemaDdlError


@dataclass(frozen=True, slots=True)
class SqlType:
    """A Spark type: ``name`` canonical (``INT``, ``DECIMAL``, ``STRUCT``...), ``fields`` for
    a STRUCT, ``element`` for an ARRAY's elements or a MAP's values."""

    name: str
    precision: int = 0
    scale: int = 0
    fields: tuple[Field, ...] = ()
    element: SqlType | None = None

    def ddl(self) -> str:
        if self.name == "DECIMAL":
            return f"DECIMAL({self.precision},{self.scale})"
        if self.name == "STRUCT":
            return "STRUCT<" + ", ".join(f.ddl(": ") for f in self.fields) + ">"
        if self.name == "ARRAY":
            assert self.element is not None
            return f"ARRAY<{self.element.ddl()}>"
        if self.name == "MAP":
            assert self.element is not None
            return f"MAP<STRING, {self.element.ddl()}>"
        return self.name

    def simple(self) -> str:
        """As Spark's ``DataType.simpleString()`` writes it (``struct<id:int,n:array<int>>``)."""
        if self.name == "DECIMAL":
            return f"decimal({self.precision},{self.scale})"
        if self.name == "STRUCT":
            return "struct<" + ",".join(f"{f.name}:{f.type.simple()}" for f in self.fields) + ">"
        if self.name in ("ARRAY", "MAP"):
            assert self.element is not None
            inner = self.element.simple()
            return f"array<{inner}>" if self.name == "ARRAY" else f"map<string,{inner}>"
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Field:
    """One named field: its type, whether it may be null or missing, its comment."""

    name: str
    type: SqlType
    nullable: bool = True
    comment: str | None = None

    def ddl(self, sep: str = " ") -> str:
        text = f"{self.name}{sep}{self.type.ddl()}"
        if not self.nullable:
            text += " NOT NULL"
        if self.comment is not None:
            text += " COMMENT '" + self.comment.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return text


@dataclass(frozen=True, slots=True)
class Schema:
    """A parsed topic schema: its top-level fields, in order."""

    fields: tuple[Field, ...]

    def ddl(self) -> str:
        """The canonical DDL (Spark's ``StructType.fromDDL`` and ``.schema()`` read it)."""
        return ", ".join(f.ddl() for f in self.fields)

    def simple(self) -> str:
        """The columns as Spark's ``StructType.simpleString()`` writes them (no nullability,
        no comments)."""
        return SqlType("STRUCT", fields=self.fields).simple()


_SCALARS = {
    "STRING": "STRING", "BOOLEAN": "BOOLEAN", "TINYINT": "TINYINT", "BYTE": "TINYINT",
    "SMALLINT": "SMALLINT", "SHORT": "SMALLINT", "INT": "INT", "INTEGER": "INT",
    "BIGINT": "BIGINT", "LONG": "BIGINT", "FLOAT": "FLOAT", "REAL": "FLOAT",
    "DOUBLE": "DOUBLE", "DATE": "DATE", "TIMESTAMP": "TIMESTAMP",
}
_DECIMALS = {"DECIMAL", "DEC", "NUMERIC"}
_UNSUPPORTED = {"BINARY", "CHAR", "VARCHAR", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "INTERVAL",
                "VOID", "VARIANT", "OBJECT"}
_TOKEN = re.compile(r"\s*(?:(`[^`]*`)|([A-Za-z_][A-Za-z0-9_]*)|(\d+)|('(?:[^'\\]|\\.)*')"
                    r"|([<>(),:]))")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_DEPTH = 16


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str, at: int | None = None) -> SchemaDdlError:
        at = self.pos if at is None else at
        near = self.text[at:at + 20] or "the end"
        return SchemaDdlError(
            f"topic schema DDL {self.text!r}: {what} at position {at} (near {near!r}). Write "
            "Spark DDL such as 'device STRING NOT NULL, temp DOUBLE, tags ARRAY<STRING>' "
            "(docs/schemas.md lists the types).")

    def peek(self) -> tuple[str, str, int]:
        """(kind, text, start) of the next token without taking it; kind '' at the end."""
        match = _TOKEN.match(self.text, self.pos)
        rest = self.text[self.pos:]
        start = self.pos + len(rest) - len(rest.lstrip())
        if match is None:
            if not rest.strip():
                return "", "", start
            raise self.fail(f"unexpected character {rest.strip()[0]!r}", start)
        index = match.lastindex or 1  # one group always matches
        kind = ("quoted", "word", "number", "string", "punct")[index - 1]
        return kind, match.group(index), start

    def take(self) -> tuple[str, str, int]:
        token = self.peek()
        match = _TOKEN.match(self.text, self.pos)
        if match is not None:
            self.pos = match.end()
        return token

    def expect(self, punct: str) -> None:
        kind, text, start = self.take()
        if kind != "punct" or text != punct:
            raise self.fail(f"expected {punct!r}, got {text or 'the end'!r}", start)

    def word_is(self, word: str) -> bool:
        kind, text, _ = self.peek()
        if kind == "word" and text.upper() == word:
            self.take()
            return True
        return False

    def fields(self, closing: str | None, depth: int) -> tuple[Field, ...]:
        found: list[Field] = []
        names: set[str] = set()
        while True:
            field = self.field(depth, in_struct=closing is not None)
            if field.name.lower() in names:
                raise self.fail(f"field {field.name!r} is declared twice")
            names.add(field.name.lower())
            found.append(field)
            kind, text, start = self.peek()
            if kind == "punct" and text == ",":
                self.take()
                continue
            if closing is None and kind == "":
                return tuple(found)
            if closing is not None and kind == "punct" and text == closing:
                self.take()
                return tuple(found)
            raise self.fail(f"expected ',' or {closing or 'the end'!r} after field "
                            f"{field.name!r}, got {text or 'the end'!r}", start)

    def field(self, depth: int, in_struct: bool) -> Field:
        kind, text, start = self.take()
        if kind == "quoted":
            text = text[1:-1]
            if not _NAME.match(text):
                raise self.fail(f"field name {text!r} must be letters, digits and _ "
                                "(not starting with a digit)", start)
        elif kind != "word":
            raise self.fail(f"expected a field name, got {text or 'the end'!r}", start)
        kind2, text2, _ = self.peek()
        if kind2 == "punct" and text2 == ":":
            self.take()
        sql_type = self.type(depth)
        nullable, comment = True, None
        while True:
            if self.word_is("NOT"):
                if not self.word_is("NULL"):
                    raise self.fail("expected NULL after NOT")
                nullable = False
            elif self.word_is("COMMENT"):
                kind3, text3, start3 = self.take()
                if kind3 != "string":
                    raise self.fail("expected a quoted comment after COMMENT", start3)
                comment = re.sub(r"\\(.)", r"\1", text3[1:-1])
            else:
                return Field(text, sql_type, nullable, comment)

    def type(self, depth: int) -> SqlType:
        if depth > MAX_DEPTH:
            raise self.fail(f"types nest deeper than {MAX_DEPTH} levels")
        kind, text, start = self.take()
        upper = text.upper()
        if kind != "word":
            raise self.fail(f"expected a type, got {text or 'the end'!r}", start)
        if upper in _SCALARS:
            return SqlType(_SCALARS[upper])
        if upper in _DECIMALS:
            return self.decimal(start)
        if upper == "STRUCT":
            self.expect("<")
            return SqlType("STRUCT", fields=self.fields(">", depth + 1))
        if upper == "ARRAY":
            self.expect("<")
            element = self.type(depth + 1)
            self.expect(">")
            return SqlType("ARRAY", element=element)
        if upper == "MAP":
            self.expect("<")
            key_start = self.peek()[2]
            if self.type(depth + 1).name != "STRING":
                raise self.fail("a MAP's keys must be STRING (JSON object keys are strings)",
                                key_start)
            self.expect(",")
            element = self.type(depth + 1)
            self.expect(">")
            return SqlType("MAP", element=element)
        if upper in _UNSUPPORTED:
            raise self.fail(f"type {upper} is not supported in a topic's schema", start)
        raise self.fail(f"unknown type {text!r}", start)

    def decimal(self, start: int) -> SqlType:
        precision, scale = 10, 0
        kind, text, _ = self.peek()
        if kind == "punct" and text == "(":
            self.take()
            precision = self.number()
            kind, text, _ = self.peek()
            if kind == "punct" and text == ",":
                self.take()
                scale = self.number()
            self.expect(")")
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise self.fail(f"DECIMAL({precision},{scale}) needs 1 <= precision <= 38 and "
                            "0 <= scale <= precision", start)
        return SqlType("DECIMAL", precision=precision, scale=scale)

    def number(self) -> int:
        kind, text, start = self.take()
        if kind != "number":
            raise self.fail(f"expected a number, got {text or 'the end'!r}", start)
        return int(text)


def parse_schema(ddl: str) -> Schema:
    """Parse ``ddl`` (comma-separated fields, as Spark's ``.schema()`` takes them; an outer
    ``STRUCT<...>`` is accepted too); SchemaDdlError names the position of a mistake."""
    if not isinstance(ddl, str) or not ddl.strip():
        raise SchemaDdlError(f"topic schema DDL must be a non-empty string; got {ddl!r}. "
                             "Write Spark DDL such as 'device STRING, temp DOUBLE'.")
    parser = _Parser(ddl)
    kind, text, _ = parser.peek()
    if kind == "word" and text.upper() == "STRUCT":
        saved = parser.pos
        parser.take()
        if parser.peek()[:2] == ("punct", "<"):
            parser.expect("<")
            sql_type = SqlType("STRUCT", fields=parser.fields(">", 2))
            kind, text, start = parser.peek()
            if kind != "":
                raise parser.fail(f"unexpected {text!r} after the STRUCT", start)
            return Schema(sql_type.fields)
        parser.pos = saved
    return Schema(parser.fields(None, 1))
