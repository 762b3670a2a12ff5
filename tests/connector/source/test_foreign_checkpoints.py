"""A checkpoint written by another source (Kafka's, swapped for sqliteq) fails naming it,
on every path Spark hands checkpoint offsets back: latestOffset(start) on pyspark 4.2+,
partitions(start, end) after the no-argument latestOffset() of 4.0/4.1, commit(end), and
the low-latency reader's read(start) and readBetweenOffsets."""

from __future__ import annotations

import pytest

from spark_queue.connector.compat import ReadAllAvailable
from spark_queue.connector.source.auto_reader import SqliteQueueAutoStreamReader
from spark_queue.connector.source.simple_reader import SqliteQueueSimpleStreamReader
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema
from spark_queue.connector.source.stream_reader import SqliteQueueStreamReader
from spark_queue.errors import OptionError

KAFKA = {"t": {"0": 3}}  # what Kafka's source writes to a checkpoint's offsets log
MESSAGE = r"written by another source.*new checkpoint location"
READERS = {
    "default": SqliteQueueStreamReader,
    "auto": SqliteQueueAutoStreamReader,
    "low": SqliteQueueSimpleStreamReader,
}


@pytest.fixture(params=sorted(READERS))
def reader(request, store, store_path):
    store.publish_many("t", range(10))
    options = parse_source_options({"path": store_path, "topic": "t", "consumer": "c"},
                                   streaming=True)
    return READERS[request.param](options, default_schema(options))


def test_kafka_offsets_from_a_checkpoint_fail_naming_another_source(reader):
    with pytest.raises(OptionError, match=MESSAGE) as raised:
        if isinstance(reader, SqliteQueueSimpleStreamReader):
            reader.read(KAFKA)
        else:
            reader.latestOffset(KAFKA, ReadAllAvailable())  # pyspark 4.2+
    assert "Kafka's per-partition form" in str(raised.value)


def test_the_no_argument_latest_offset_path_fails_at_partitions(reader):
    """pyspark 4.0/4.1: latestOffset() has no start; the checkpoint's start reaches
    partitions(start, end) (readBetweenOffsets for the low-latency reader)."""
    if isinstance(reader, SqliteQueueSimpleStreamReader):
        with pytest.raises(OptionError, match=MESSAGE):
            list(reader.readBetweenOffsets(KAFKA, {"t": 5}))
        return
    end = reader.latestOffset()
    assert end["t"] == 10
    with pytest.raises(OptionError, match=MESSAGE):
        reader.partitions(KAFKA, end)


def test_a_commit_of_kafka_offsets_fails_and_saves_nothing(reader, store):
    with pytest.raises(OptionError, match=MESSAGE):
        reader.commit({"t": {"0": 5}})
    assert store.committed_offsets("c") == {}


@pytest.mark.parametrize("offsets", [{"t": "3"}, {"t": -1}, {"t": True}, ["t", 3]])
def test_any_other_foreign_offset_form_fails_the_same_way(reader, offsets):
    with pytest.raises(OptionError, match=MESSAGE) as raised:
        if isinstance(reader, SqliteQueueSimpleStreamReader):
            reader.read(offsets)
        else:
            reader.latestOffset(offsets, ReadAllAvailable())
    assert "Kafka" not in str(raised.value)
