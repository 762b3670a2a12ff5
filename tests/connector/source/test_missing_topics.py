"""A named topic the store does not hold (a typo such as ``clickz`` beside ``clicks``): a batch
read fails naming the close topics, a stream waits for it but says so once and reports it;
the connector's errors are raised from the DataSource's own frame (issue 34). No Spark
session: the readers are called as Spark's driver calls them."""

from __future__ import annotations

import logging
import traceback

import pytest

from spark_queue.connector.datasource import SqliteQueueDataSource
from spark_queue.connector.source.batch_reader import SqliteQueueBatchReader
from spark_queue.connector.source.offsets import checkpoint_offsets as topics
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema
from spark_queue.connector.source.stream_reader import SqliteQueueStreamReader
from spark_queue.errors import OptionError, UnknownTopicError


def test_a_batch_read_of_a_missing_named_topic_fails_naming_the_close_topics(store, store_path):
    store.publish("clicks", 1)
    store.topic("orders").create()
    for options in ({"topic": "clickz"}, {"topics": "orders,clickz"},
                    {"assign": '{"clickz": [0]}'}):
        opts = parse_source_options({"path": store_path, **options}, streaming=False)
        with pytest.raises(UnknownTopicError) as caught:
            SqliteQueueBatchReader(opts, default_schema(opts)).partitions()
        message = str(caught.value)
        assert "'clickz'" in message and "did you mean 'clicks'?" in message
        assert f"sqliteq topics {store_path}" in message and "\n" not in message


def test_a_batch_read_by_pattern_or_of_existing_topics_is_not_refused(store, store_path):
    store.publish("clicks", 1)
    for options in ({"topic": "clicks"}, {"topicPattern": "nothing.*"}):
        opts = parse_source_options({"path": store_path, **options}, streaming=False)
        SqliteQueueBatchReader(opts, default_schema(opts)).partitions()


def test_a_stream_on_a_missing_named_topic_warns_once_reports_it_and_reads_it_once_created(
    store, store_path, caplog
):
    store.publish("clicks", 1)
    opts = parse_source_options({"path": store_path, "topics": "clicks,clickz"}, streaming=True)
    reader = SqliteQueueStreamReader(opts, default_schema(opts))
    start = reader.initialOffset()
    with caplog.at_level(logging.WARNING, logger="spark_queue.connector"):
        for _ in range(3):
            end = reader.latestOffset(start, None)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "'clickz'" in warnings[0] and "did you mean 'clicks'?" in warnings[0]
    assert "waits" in warnings[0]
    assert topics(end) == {"clicks": 1}
    assert reader.reportLatestOffset() == {"clicks": 1, "clickz": None}
    store.publish("clickz", "late")  # a producer that started later: read from offset 0
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="spark_queue.connector"):
        assert topics(reader.latestOffset(end, None)) == {"clicks": 1, "clickz": 1}
    assert not caplog.records
    assert reader.reportLatestOffset() == {"clicks": 1, "clickz": 1}


def test_the_low_latency_reader_warns_once_too_and_reads_the_topic_once_created(
    store, store_path, caplog
):
    from spark_queue.connector.source.simple_reader import SqliteQueueSimpleStreamReader

    store.publish("clicks", 1)
    opts = parse_source_options({"path": store_path, "topic": "clickz", "latencyMode": "low"},
                                streaming=True)
    reader = SqliteQueueSimpleStreamReader(opts, default_schema(opts))
    start = reader.initialOffset()
    with caplog.at_level(logging.WARNING, logger="spark_queue.connector"):
        for _ in range(3):
            _, end = reader.read(start)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "did you mean 'clicks'?" in warnings[0], warnings
    assert end == start
    store.publish("clickz", "late")
    rows, end = reader.read(start)
    assert topics(end) == {"clickz": 1}


def test_option_errors_are_raised_from_the_data_sources_own_frame(store_path, store):
    bad = [{"path": store_path, "topci": "t"}, {"path": store_path},
           {"path": store_path, "topic": "t", "maxRowsPerTrigger": "many"}]
    for options in bad:
        for call in (lambda ds: ds.schema(), lambda ds: ds.reader(default_schema(
                parse_source_options({"path": store_path, "topic": "t"}, streaming=None)))):
            with pytest.raises(OptionError) as caught:
                call(SqliteQueueDataSource(options))
            frames = traceback.extract_tb(caught.value.__traceback__)
            files = [frame.filename for frame in frames]
            assert not any(f.endswith(("options.py", "option_table.py")) for f in files), files
            assert files[-1].endswith("datasource.py")
            assert caught.value.__cause__ is None and caught.value.__suppress_context__
