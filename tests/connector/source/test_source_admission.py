"""The stream reader's driver-side planning, called directly (no Spark session, a fake clock)."""

from __future__ import annotations

import pickle

import pytest

from spark_queue.connector.compat import ReadAllAvailable, ReadMaxRows, ReadMinRows
from spark_queue.connector.source.offsets import checkpoint_offsets as topics
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema
from spark_queue.connector.source.stream_reader import SqliteQueueStreamReader
from spark_queue.errors import DataLossError, OffsetRangeError
from spark_queue.store.file.connection import now_ms


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def make_reader(store_path, **options):
    opts = parse_source_options({"path": store_path, **options}, streaming=True)
    reader = SqliteQueueStreamReader(opts, default_schema(opts))
    reader._planner.admission.clock = FakeClock()
    return reader


def test_min_rows_waits_for_rows_or_the_delay_whichever_first(store, store_path):
    store.publish_many("t", range(200))
    reader = make_reader(store_path, topic="t", minRowsPerTrigger="500", maxTriggerDelay="2s")
    limit = reader.getDefaultReadLimit()
    assert limit == ReadMinRows(500)
    start = reader.initialOffset()
    assert topics(start) == {"t": 0}
    assert reader.latestOffset(start, limit) == start  # 200 < 500, clock starts
    reader._planner.admission.clock.now += 1.9
    assert reader.latestOffset(start, limit) == start
    reader._planner.admission.clock.now += 0.1  # the delay has passed: take what there is
    end = reader.latestOffset(start, limit)
    assert topics(end) == {"t": 200}
    # Rows first: 500 arrive well inside the delay.
    store.publish_many("t", range(500))
    reader._planner.admission.clock.now += 0.1
    assert topics(reader.latestOffset(end, limit)) == {"t": 700}


def test_max_rows_caps_each_batch_and_all_available_ignores_it(store, store_path):
    store.publish_many("t", range(2500))
    reader = make_reader(store_path, topic="t", maxRowsPerTrigger="1000")
    assert reader.getDefaultReadLimit() == ReadMaxRows(1000)
    assert topics(reader.latestOffset({"t": 0}, ReadMaxRows(1000))) == {"t": 1000}
    assert topics(reader.latestOffset({"t": 2000}, ReadMaxRows(1000))) == {"t": 2500}
    assert topics(reader.latestOffset({"t": 2500}, ReadMaxRows(1000))) == {"t": 2500}
    assert topics(reader.latestOffset({"t": 0}, ReadAllAvailable())) == {"t": 2500}


def test_available_now_stops_at_the_offsets_seen_when_prepared(store, store_path):
    store.publish_many("a", range(30))
    reader = make_reader(store_path, topicPattern="[ab]", maxRowsPerTrigger="20",
                         minRowsPerTrigger="10")
    reader.prepareForTriggerAvailableNow()
    store.publish_many("a", range(5))
    store.publish_many("b", range(5))  # a new topic after the target: not in this run
    limit = reader.getDefaultReadLimit()
    assert topics(reader.latestOffset({"a": 0}, limit)) == {"a": 20}
    # The minimum is ignored under AvailableNow so the run ends.
    assert topics(reader.latestOffset({"a": 20}, limit)) == {"a": 30}
    assert topics(reader.latestOffset({"a": 30}, limit)) == {"a": 30}
    assert reader.reportLatestOffset() == {"a": 35, "b": 5}


def test_new_topics_matching_the_pattern_start_at_offset_zero(store, store_path):
    store.publish_many("ev-1", range(3))
    reader = make_reader(store_path, topicPattern="ev-.*")
    start = reader.initialOffset()
    assert topics(start) == {"ev-1": 0}
    store.publish_many("ev-2", range(4))
    store.publish_many("other", range(4))
    end = reader.latestOffset(start, ReadAllAvailable())
    assert topics(end) == {"ev-1": 3, "ev-2": 4}
    parts = reader.partitions(start, end)
    assert sorted((p.topic, p.start, p.end) for p in parts) == [("ev-1", 0, 3), ("ev-2", 0, 4)]


def test_commit_saves_consumer_offsets_monotonically(store, store_path):
    store.publish_many("t", range(10))
    reader = make_reader(store_path, topic="t", consumer="c1")
    reader.commit({"t": 7})
    reader.commit({"t": 4})  # a late commit never moves the consumer back
    assert store.committed_offsets("c1") == {"t": 7}


def test_data_loss_fails_naming_topic_requested_and_earliest(store, store_path):
    store.publish_many("t", range(100))
    store.topic("t").prune(retention_rows=40)  # earliest becomes 60
    reader = make_reader(store_path, topic="t")
    with pytest.raises(DataLossError) as info:
        reader.latestOffset({"t": 10}, ReadAllAvailable())
    message = str(info.value)
    assert "'t'" in message and "requested offset 10" in message
    assert "earliest available offset 60" in message
    lenient = make_reader(store_path, topic="t", failOnDataLoss="false")
    assert topics(lenient.latestOffset({"t": 10}, ReadMaxRows(15))) == {"t": 75}
    parts = lenient.partitions({"t": 10}, {"t": 75})
    assert [(p.start, p.end) for p in parts] == [(60, 75)]


def test_reader_pickles_without_a_connection(store, store_path):
    store.publish_many("t", range(3))
    reader = make_reader(store_path, topic="t")
    reader.initialOffset()
    copy = pickle.loads(pickle.dumps(reader))
    assert copy.options == reader.options


def test_skipping_lost_offsets_advances_even_without_new_rows(store, store_path):
    store.publish_many("t", range(50))
    # Everything gone: earliest == latest == 50.
    store.topic("t").prune(retention_ms=1, at_ms=now_ms() + 1000, force=True)
    lenient = make_reader(store_path, topic="t", failOnDataLoss="false")
    assert topics(lenient.latestOffset({"t": 10}, ReadAllAvailable())) == {"t": 50}
    assert topics(lenient.latestOffset({"t": 50}, ReadAllAvailable())) == {"t": 50}


def test_a_checkpoint_ahead_of_the_store_fails_clearly(store, store_path):
    store.publish_many("t", range(5))
    reader = make_reader(store_path, topic="t")
    with pytest.raises(OffsetRangeError, match="checkpoint is at offset 9 .* latest offset is 5"):
        reader.latestOffset({"t": 9}, ReadAllAvailable())
