"""Typed JSON decoding in Arrow (no Spark session): exact on good rows, exact about bad ones."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_queue.connector.source.json_decode import JsonDecoder
from spark_queue.errors import PayloadError

TARGET = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("user", pa.string()),
        pa.field("score", pa.float64()),
        pa.field("ok", pa.bool_()),
        pa.field("day", pa.date32()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("_corrupt_record", pa.string()),
    ]
)


def decode(values, permissive=True, target=TARGET):
    decoder = JsonDecoder(target, "_corrupt_record", permissive, "t")
    return decoder.decode(pa.array(values, pa.binary()), pa.array(range(len(values)))).to_pylist()


rows = st.fixed_dictionaries(
    {
        "id": st.integers(-(2**63), 2**63 - 1),
        "user": st.text(),
        "score": st.floats(allow_nan=False, allow_infinity=False),
        "ok": st.booleans(),
        "tags": st.lists(st.text(max_size=5), max_size=3),
    }
)


@settings(max_examples=50, deadline=None)
@given(st.lists(rows, min_size=1, max_size=40))
def test_every_well_formed_row_decodes_exactly(records):
    values = [json.dumps(r).encode() for r in records]
    decoded = decode(values)
    assert len(decoded) == len(records)
    for got, want in zip(decoded, records, strict=True):
        assert got["_corrupt_record"] is None
        assert {k: got[k] for k in want} == want


def test_malformed_rows_are_found_exactly_in_permissive_mode():
    values = [
        b'{"id": 1, "day": "2024-01-02"}',
        b"not json",
        None,
        b'{"id": 2}{"id": 3}',
        b"",
        b'{"id":\n4}',
        b'{"id": "five"}',
        b"[1, 2]",
        b'{"id": 6}',
    ]
    decoded = decode(values)
    assert [r["id"] for r in decoded] == [1, None, None, None, None, 4, None, None, 6]
    corrupt = [r["_corrupt_record"] for r in decoded]
    assert corrupt == [
        None, "not json", None, '{"id": 2}{"id": 3}', "", None, '{"id": "five"}', "[1, 2]", None
    ]
    assert str(decoded[0]["day"]) == "2024-01-02"


def test_failfast_names_topic_and_offset():
    decoder = JsonDecoder(TARGET, "_corrupt_record", False, "orders")
    values = pa.array([b'{"id": 1}', b'{"id": 2', b'{"id": 3}'])
    with pytest.raises(PayloadError, match=r"topic 'orders' offset 41 .*PERMISSIVE"):
        decoder.decode(values, pa.array([40, 41, 42]))


def test_without_a_corrupt_column_bad_rows_are_all_null():
    target = pa.schema([pa.field("id", pa.int64())])
    assert decode([b'{"id": 1}', b"x"], target=target) == [{"id": 1}, {"id": None}]
