"""check_answer's comparison and its diff: rows missing, rows extra, rows counted twice."""

from __future__ import annotations

import datetime

import pytest

from spark_queue.errors import StreamTestError
from spark_queue.testing.answers import compare


def failure(actual, expected, ordered=False) -> str:
    with pytest.raises(StreamTestError) as caught:
        compare(actual, expected, ordered=ordered, what="check")
    return str(caught.value)


def test_the_same_rows_in_any_order_pass_and_in_another_order_fail_when_ordered():
    rows = [{"id": 1}, {"id": 2}]
    compare(rows, [{"id": 2}, {"id": 1}], ordered=False, what="check")
    message = failure(rows, [{"id": 2}, {"id": 1}], ordered=True)
    assert "the same rows in another order" in message


def test_the_diff_names_missing_extra_and_rows_counted_twice():
    message = failure([{"id": 1}, {"id": 1}, {"id": 3}], [{"id": 1}, {"id": 2}])
    assert "3 rows where 2 were expected" in message
    assert "missing (1):\n    {'id': 2}" in message
    assert "extra (1):\n    {'id': 3}" in message
    assert "{'id': 1}: 2 times, expected 1 (counted twice: a replayed batch?)" in message


def test_tuples_match_by_position_and_a_bare_value_matches_a_one_column_row():
    compare([{"id": 1, "name": "a"}], [(1, "a")], ordered=True, what="check")
    compare([{"value": "x"}], ["x"], ordered=True, what="check")
    assert "missing" in failure([{"id": 1, "name": "a"}], [(1, "a", "extra column")])


def test_datetimes_compare_with_what_the_sink_gives_back_and_rows_nest():
    stamp = datetime.datetime(2024, 1, 1, 0, 1)
    compare([{"at": stamp, "w": {"start": stamp}}], [(stamp, {"start": stamp})],
            ordered=True, what="check")


def test_an_empty_sink_against_rows_lists_them_all_as_missing():
    assert "missing (2)" in failure([], ["a", "b"])
