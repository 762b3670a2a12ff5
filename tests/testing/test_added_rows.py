"""What StreamTest.add publishes for each shape of row."""

from __future__ import annotations

import pytest

from spark_queue.errors import ArgumentError
from spark_queue.store import Record
from spark_queue.testing.added_rows import records


def test_values_dicts_and_kafka_tuples_become_records():
    assert records(["a", b"b", {"n": 1}]) == ["a", b"b", {"n": 1}]
    assert records([("k", "v"), ("k", "v", {"h": "1"})]) == [
        Record("v", key="k"), Record("v", key="k", headers={"h": "1"})]


def test_one_value_dict_or_tuple_alone_is_one_row():
    assert records("a") == ["a"]
    assert records({"n": 1}) == [{"n": 1}]
    assert records(("k", "v")) == [Record("v", key="k")]


def test_a_tuple_of_another_length_or_bad_headers_is_refused_with_the_fix():
    with pytest.raises(ArgumentError, match=r"\(key, value\) or \(key, value, headers\)"):
        records([("k", "v", {}, "x")])
    with pytest.raises(ArgumentError, match="headers must be a dict"):
        records([("k", "v", "h")])
