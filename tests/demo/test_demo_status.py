"""The demo's progress line without Spark: never a negative rate, never a lag against 0 for a
query that resumes from its checkpoint."""

from __future__ import annotations

import re

from spark_queue.demo.status import BronzeStatus, has_checkpoint


def report(start: int | None, end: int) -> dict:
    """A progress report as pyspark 4.0/4.1 give it (offsets as a Python repr)."""
    return {"sources": [{"startOffset": None if start is None else repr({"readings": start}),
                         "endOffset": repr({"readings": end})}]}


class Query:
    def __init__(self) -> None:
        self.recentProgress: list[dict] = []

    @property
    def lastProgress(self) -> dict | None:
        return self.recentProgress[-1] if self.recentProgress else None

    def batch(self, start: int | None, end: int) -> None:
        self.recentProgress.append(report(start, end))


def numbers(line: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"-?\d[\d,]*", line)]


def test_a_resumed_query_says_so_until_its_first_batch_and_then_counts_from_its_checkpoint():
    # The store holds 20,000 events; the checkpoint stood at 5,000 when the last run died.
    status, query = BronzeStatus("readings", resuming=True), Query()
    for _ in range(3):  # a restart can take many seconds before its first batch
        assert status.phase(query.lastProgress, producing=True) == "resuming"
        assert status.describe(query.lastProgress, query, 20_000, 2.0) == (
            "bronze resuming from its checkpoint")
    query.batch(5_000, 10_000)
    line = status.describe(query.lastProgress, query, 20_400, 2.0)
    assert line == "bronze 2,500 rows/s, lag 10,400"  # (10,000 - 5,000) / 2 s, not vs 20,000
    assert status.phase(query.lastProgress, producing=True) == "streaming"
    query.batch(10_000, 15_000)
    assert status.describe(query.lastProgress, query, 21_000, 2.0) == (
        "bronze 2,500 rows/s, lag 6,000")


def test_rates_count_from_the_runs_first_batch_even_when_several_ran_between_lines():
    status, query = BronzeStatus("readings", resuming=True), Query()
    query.batch(5_000, 6_000)
    query.batch(6_000, 8_000)
    assert status.describe(query.lastProgress, query, 8_000, 1.0) == "bronze 3,000 rows/s, lag 0"


def test_a_new_query_waits_for_batch_1_with_the_whole_topic_as_its_lag():
    status, query = BronzeStatus("readings", resuming=False), Query()
    assert status.phase(None, producing=True) == "waiting for batch 1"
    assert status.describe(None, query, 1_200, 2.0) == (
        "bronze waiting for its first batch, lag 1,200")
    query.batch(None, 1_000)  # Spark reports no start offset for a new query's first batch
    assert status.describe(query.lastProgress, query, 1_500, 2.0) == "bronze 500 rows/s, lag 500"
    assert status.phase(query.lastProgress, producing=False) == "catching up"


def test_no_line_ever_shows_a_negative_number():
    status, query = BronzeStatus("readings", resuming=True), Query()
    ends = [14_800, 14_800, 16_000, 30_000]
    lines = [status.describe(None, query, 29_600, 2.0)]
    start = 14_800
    for end in ends:
        query.batch(start, end)
        start = end
        lines.append(status.describe(query.lastProgress, query, 30_000, 2.0))
    assert all(n >= 0 for line in lines for n in numbers(line)), lines


def test_a_checkpoint_counts_once_spark_logged_a_batch_in_it(tmp_path):
    checkpoint = tmp_path / "bronze"
    assert not has_checkpoint(str(checkpoint))
    (checkpoint / "offsets").mkdir(parents=True)
    assert not has_checkpoint(str(checkpoint))  # a query that died before its first batch
    (checkpoint / "offsets" / "0").write_text("v1\n")
    assert has_checkpoint(str(checkpoint))
