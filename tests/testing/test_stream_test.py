"""StreamTest's promises through a real Spark (the project's Classic session, Delta in it):
each sink read back, the last batch, complete mode, and the failures' messages."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from spark_queue.errors import OptionError, StreamTestError
from spark_queue.testing import StreamTest

pytestmark = pytest.mark.slow


def words(df):
    return df.select(F.col("value").cast("string").alias("word"))


@pytest.mark.parametrize("sink", ["topic", "queue", "memory", "parquet", "delta"])
def test_every_sink_gives_back_its_rows_and_all_but_delta_the_last_batch(spark, sink):
    with StreamTest(spark, words, sink=sink, options={"maxRowsPerTrigger": 2}) as test:
        test.add(["a", "b", "c"]).check_answer([{"word": "a"}, "b", ("c",)])
        if sink == "delta":
            with pytest.raises(OptionError, match="delta sink does not say which rows"):
                test.check_last_batch(["c"])
        else:
            test.check_last_batch(["c"])  # batches of 2 and 1


def test_complete_mode_checks_the_result_table_of_the_last_batch(spark):
    def counts(df):
        return words(df).groupBy("word").count()

    with StreamTest(spark, counts, output_mode="complete") as test:
        test.add(["a", "a", "b"]).check_answer([("a", 2), ("b", 1)])
        test.add("a").check_answer([("a", 3), ("b", 1)])
        assert len(test.rows()) == 4  # the topic holds both result tables


def test_process_all_times_out_naming_the_lagging_topic_and_both_offsets(spark):
    with StreamTest(spark, words) as test:
        test.add(["a", "b"])
        with pytest.raises(StreamTestError) as caught:
            test.process_all(timeout=0)  # the first look at the offsets is past the deadline
    message = str(caught.value)
    assert "topic 'in': committed up to offset 0, the topic ends at 2 (2 events behind)" in message
    assert "its last error: None" in message


def test_a_wrong_answer_prints_what_is_missing_and_extra(spark):
    with StreamTest(spark, words) as test, pytest.raises(StreamTestError) as caught:
        test.add(["a", "b"]).check_answer(["a", "c"])
    assert "missing (1):\n    {'word': 'c'}" in str(caught.value)
    assert "extra (1):\n    {'word': 'b'}" in str(caught.value)


def test_expect_failure_fails_when_the_query_processes_everything(spark):
    with StreamTest(spark, words) as test, pytest.raises(StreamTestError,
                                                         match="without failing"):
        test.add("a").expect_failure()


def test_closing_stops_every_query_even_after_a_failed_check(spark):
    test = StreamTest(spark, words)
    with pytest.raises(StreamTestError), test:
        test.add("a").check_answer(["b"])
    assert not [q for q in spark.streams.active if q.isActive]
