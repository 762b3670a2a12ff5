"""Durations and times as people type them mean the same in every flag and option."""

from __future__ import annotations

import pytest

from spark_queue.times import (
    format_duration_ms,
    format_time_ms,
    has_unit,
    parse_duration_ms,
    parse_time_ms,
)


@pytest.mark.parametrize(
    ("text", "millis"),
    [("500ms", 500), ("30s", 30_000), ("15m", 900_000), ("1h", 3_600_000),
     ("7d", 604_800_000), ("2 hours", 7_200_000), ("250", 250), (" 1D ", 86_400_000)],
)
def test_durations_read_with_their_unit_and_bare_numbers_are_milliseconds(text, millis):
    assert parse_duration_ms(text) == millis


@pytest.mark.parametrize("text", ["", "1w", "-5m", "1.5h", "h", "10 m s"])
def test_text_that_is_not_a_duration_is_refused_not_guessed(text):
    assert parse_duration_ms(text) is None


def test_only_a_number_with_a_unit_counts_as_a_duration_where_a_time_is_also_allowed():
    assert has_unit("10m") and not has_unit("600000") and not has_unit("soon")


@pytest.mark.parametrize(
    ("text", "millis"),
    [("2024-05-01T12:00:00Z", 1_714_564_800_000),
     ("2024-05-01T12:00:00", 1_714_564_800_000),
     ("2024-05-01T14:00:00+02:00", 1_714_564_800_000),
     ("2024-05-01T12:00:00.250Z", 1_714_564_800_250),
     ("1714564800000", 1_714_564_800_000)],
)
def test_times_are_iso_8601_utc_unless_zoned_or_epoch_milliseconds(text, millis):
    assert parse_time_ms(text) == millis


@pytest.mark.parametrize("text", ["yesterday", "1969-12-31T23:59:59Z", "2024-13-01"])
def test_text_that_is_not_a_time_is_refused(text):
    assert parse_time_ms(text) is None


def test_times_print_as_utc_iso_with_milliseconds_and_read_back_the_same():
    assert format_time_ms(1_714_564_800_250) == "2024-05-01T12:00:00.250Z"
    assert parse_time_ms(format_time_ms(1_999)) == 1_999


@pytest.mark.parametrize(
    ("millis", "text"),
    [(604_800_000, "7d"), (5_400_000, "90m"), (1500, "1500ms"), (30_000, "30s"), (0, "0ms")],
)
def test_durations_print_in_the_largest_exact_unit(millis, text):
    assert format_duration_ms(millis) == text
    assert parse_duration_ms(text) == millis
