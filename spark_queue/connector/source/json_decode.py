"""Decode JSON payloads into a user's typed columns, all in Arrow.

The fast path joins a chunk's values into newline-delimited JSON (Arrow
compute, no Python objects per row) and parses it with pyarrow's JSON reader
against the user's schema. A chunk that fails is bisected until each bad row
stands alone, so well-formed rows always decode with the same parser and
malformed ones are found exactly: FAILFAST raises naming topic and offset,
PERMISSIVE yields an all-null row plus the raw text in the corrupt-record
column (when the schema has it), like Spark's JSON reader.

A null value decodes as an all-null row (not corrupt); a value that is not
one JSON object (a number, a list, blank text, two objects) is malformed,
and so is an object whose field does not convert to its column's type.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from spark_queue.errors import PayloadError

# Types pyarrow's JSON reader does not parse from JSON strings: read as text, then cast.
_CAST_FROM_STRING = (pa.types.is_date,)


# Wrapping around each value (bytes; pa.scalar at import time would pull in pandas).
_PREFIX = b'{"v":'
_SUFFIX = b"}\n"


class _Malformed(Exception):
    pass


class JsonDecoder:
    """Decode a binary column of JSON values into ``target`` (an Arrow schema)."""

    def __init__(self, target: pa.Schema, corrupt_column: str, permissive: bool, topic: str):
        self.target = target
        self.corrupt_column = corrupt_column if corrupt_column in target.names else None
        self.permissive = permissive
        self.topic = topic
        parsed = [f for f in target if f.name != corrupt_column]
        self.cast_fields = {
            f.name: f.type for f in parsed if any(test(f.type) for test in _CAST_FROM_STRING)
        }
        self.parse_schema = pa.schema(
            [pa.field(f.name, pa.string()) if f.name in self.cast_fields else f for f in parsed]
        )
        # Each value is parsed wrapped as {"v": <value>}: exactly one row per
        # line, and a value that is not one JSON object fails to parse.
        self.parse_options = pajson.ParseOptions(
            explicit_schema=pa.schema([pa.field("v", pa.struct(list(self.parse_schema)))]),
            unexpected_field_behavior="ignore",
        )
        self.read_options = pajson.ReadOptions(use_threads=False, block_size=1 << 24)

    def decode(self, values: pa.Array, offsets: pa.Array) -> pa.RecordBatch:
        """``values`` (binary, one JSON object each) -> a batch with the target schema."""
        if len(values) == 0:
            return pa.RecordBatch.from_arrays(
                [pa.array([], f.type) for f in self.target], schema=self.target
            )
        values = values.cast(pa.binary())
        # Raw newlines can only be whitespace inside valid JSON: safe to blank them.
        flat = pc.replace_substring(pc.replace_substring(values, b"\n", b" "), b"\r", b" ")
        flat = pc.fill_null(flat, b"null")
        pieces: list[tuple[pa.Table | None, int]] = []
        self._decode_range(flat, 0, len(flat), pieces)
        tables = []
        corrupt_mask: list[bool] = []
        for table, count in pieces:
            if table is None:
                if not self.permissive:
                    index = len(corrupt_mask)
                    raise PayloadError(
                        f"sqliteq source: topic {self.topic!r} offset {offsets[index].as_py()} "
                        f"holds a value that is not a JSON object matching the schema "
                        f"({_preview(values[index].as_py())}). Use mode=PERMISSIVE to get "
                        "nulls and the raw text in the corrupt-record column instead."
                    )
                tables.append(_null_table(self.parse_schema, count))
                corrupt_mask.extend([True] * count)
            else:
                tables.append(table)
                corrupt_mask.extend([False] * count)
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        columns = []
        for field in self.target:
            if field.name == self.corrupt_column:
                raw = _as_text(values)
                mask = pa.array(corrupt_mask, pa.bool_())
                columns.append(pc.if_else(mask, raw, pa.nulls(len(values), pa.string())))
                continue
            column = table.column(field.name).combine_chunks()
            if field.name in self.cast_fields:
                column = column.cast(field.type)
            columns.append(column)
        return pa.RecordBatch.from_arrays(columns, schema=self.target)

    def _parse(self, flat: pa.Array, start: int, end: int) -> pa.Table:
        chunk = flat.slice(start, end - start)
        joined = pc.binary_join_element_wise(
            pa.scalar(_PREFIX), chunk, pa.scalar(_SUFFIX), b""
        )
        offsets = joined.buffers()[1]
        data = joined.buffers()[2]
        first = _int32_at(offsets, joined.offset)
        last = _int32_at(offsets, joined.offset + len(joined))
        buffer = data[first:last] if data is not None else b""
        try:
            table = pajson.read_json(
                io.BytesIO(buffer), read_options=self.read_options, parse_options=self.parse_options
            )
            if table.num_rows != end - start:
                raise _Malformed
            wrapped = table.column("v").combine_chunks()
            # flatten() folds the struct's own nulls (a null value) into its fields.
            table = pa.Table.from_arrays(wrapped.flatten(), schema=self.parse_schema)
            for name, typ in self.cast_fields.items():
                table.column(name).cast(typ)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise _Malformed from exc
        return table

    def _decode_range(
        self, flat: pa.Array, start: int, end: int, pieces: list[tuple[pa.Table | None, int]]
    ) -> None:
        try:
            pieces.append((self._parse(flat, start, end), end - start))
        except _Malformed:
            if end - start == 1:
                pieces.append((None, 1))
                return
            middle = (start + end) // 2
            self._decode_range(flat, start, middle, pieces)
            self._decode_range(flat, middle, end, pieces)


def _as_text(values: pa.Array) -> pa.Array:
    try:
        return values.cast(pa.string())
    except pa.ArrowInvalid:  # not UTF-8: keep what can be shown
        return pa.array(
            [None if v is None else v.decode("utf-8", "replace") for v in values.to_pylist()],
            pa.string(),
        )


def _int32_at(buffer: pa.Buffer, index: int) -> int:
    return int.from_bytes(buffer[index * 4 : index * 4 + 4].to_pybytes(), "little", signed=True)


def _null_table(schema: pa.Schema, count: int) -> pa.Table:
    return pa.Table.from_arrays([pa.nulls(count, f.type) for f in schema], schema=schema)


def _preview(value: bytes | None) -> str:
    if value is None:
        return "null"
    text = repr(value[:60])
    return text + ("..." if len(value) > 60 else "")
