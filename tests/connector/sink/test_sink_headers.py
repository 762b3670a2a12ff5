"""Kafka headers reach the store exactly, or the batch fails naming the header and the row."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from spark_queue.connector.sink.encode import encode_header_column
from spark_queue.errors import PayloadError

KAFKA = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
MAP = pa.map_(pa.string(), pa.string())


def kafka_headers(*rows):
    return pa.array([None if r is None else [{"key": k, "value": v} for k, v in r] for r in rows],
                    type=KAFKA)


def test_distinct_headers_are_stored_in_order_and_exactly():
    encoded = encode_header_column(
        kafka_headers([("b", b"2"), ("a", "é".encode())], None, []), "headers"
    ).to_pylist()
    assert encoded[1:] == [None, None]
    assert list(json.loads(encoded[0]).items()) == [("b", "2"), ("a", "é")]


def test_a_repeated_header_key_fails_the_batch_naming_the_key_and_the_row():
    array = kafka_headers([("a", b"1")], [("trace", b"x"), ("other", b"y"), ("trace", b"z")])
    with pytest.raises(PayloadError) as info:
        encode_header_column(array, "headers")
    message = str(info.value)
    assert "header 'trace' in column 'headers' of row 1" in message
    assert "appears more than once" in message and "Nothing of this batch was written" in message
    assert "b'x'" in message and "b'z'" in message  # both values shown, neither dropped


def test_a_null_header_value_fails_the_batch_naming_the_key_and_the_row():
    with pytest.raises(PayloadError, match="header 'k' in column 'hdrs' of row 0 .* null"):
        encode_header_column(kafka_headers([("k", None)]), "hdrs")
    with pytest.raises(PayloadError, match="header 'm' .* of row 1 .* null"):
        encode_header_column(pa.array([[("x", "1")], [("m", None)]], type=MAP), "hdrs")


def test_a_binary_header_that_is_not_utf8_fails_naming_the_key_and_the_row():
    with pytest.raises(PayloadError, match="header 'bin' .* of row 2 .* not UTF-8"):
        encode_header_column(kafka_headers([], None, [("bin", b"\xff\xfe")]), "headers")
