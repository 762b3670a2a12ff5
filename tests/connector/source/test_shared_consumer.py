"""Queries sharing one ``consumer`` name (one source DataFrame, two sinks) each hold retention
at their own position, from their start on, and a restarted query saves under the id its
checkpoint carries. The readers are driven as Spark's planning process drives them (no
Spark: tests/connector/source/test_shared_consumer_spark.py runs the real thing)."""

from __future__ import annotations

import pytest

from spark_queue.connector.offset_json import READER_KEY
from spark_queue.connector.source.auto_reader import SqliteQueueAutoStreamReader
from spark_queue.connector.source.simple_reader import SqliteQueueSimpleStreamReader
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema
from spark_queue.connector.source.stream_reader import SqliteQueueStreamReader
from spark_queue.store import Store

READERS = {
    "default": SqliteQueueStreamReader,
    "auto": SqliteQueueAutoStreamReader,
    "low": SqliteQueueSimpleStreamReader,
}


@pytest.fixture(params=sorted(READERS))
def kind(request):
    return request.param


def new_reader(kind: str, path: str, **given: str):
    options = parse_source_options(
        {"path": path, "topic": "t", "consumer": "bronze", "startingOffsets": "earliest",
         "maxRowsPerTrigger": "10", **given}, streaming=True)
    return READERS[kind](options, default_schema(options))


def plan(reader, start: dict) -> dict:
    """One micro-batch from ``start`` as Spark runs it: planned, logged, read; its end."""
    if isinstance(reader, SqliteQueueSimpleStreamReader):
        rows, end = reader.read(start)
        list(rows)
        return end
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    reader.partitions(start, end)
    return end


def pruned_to(store: Store) -> int:
    return store.topic("t").prune(retention_rows=1)[0].earliest_after


def test_a_new_querys_first_batch_is_held_before_spark_commits_anything(kind, store, store_path):
    store.publish_many("t", range(50))
    store.commit_offsets("bronze", {"t": 50}, reader="other-query")
    reader = new_reader(kind, store_path)
    start = reader.initialOffset()
    assert start["t"] == 0 and isinstance(start[READER_KEY], str)
    # Nothing planned or committed yet: retention keeps the first batch's events.
    assert pruned_to(store) == 0
    end = plan(reader, start)
    assert (end["t"], end[READER_KEY]) == (10, start[READER_KEY])
    assert pruned_to(store) == 0  # planned, not committed: still held at its start
    reader.commit(end)
    assert pruned_to(store) == 10
    assert store.committed_offsets("bronze") == {"t": 10}


def test_two_queries_on_one_name_keep_two_positions(kind, store, store_path):
    store.publish_many("t", range(100))
    fast, slow = new_reader(kind, store_path), new_reader(kind, store_path)
    fast_at, slow_at = fast.initialOffset(), slow.initialOffset()
    assert fast_at[READER_KEY] != slow_at[READER_KEY]
    for _ in range(5):
        fast_at = plan(fast, fast_at)
        fast.commit(fast_at)
    slow_at = plan(slow, slow_at)
    slow.commit(slow_at)
    assert {p.next_offset for p in store.consumer_positions("t")} == {50, 10}
    assert pruned_to(store) == 10  # the faster query never releases the slower one's events
    assert store.committed_offsets("bronze") == {"t": 10}


def test_a_restarted_query_saves_under_the_id_its_checkpoint_carries(kind, store, store_path):
    store.publish_many("t", range(30))
    first = new_reader(kind, store_path)
    logged = plan(first, first.initialOffset())
    first.commit(logged)
    again = new_reader(kind, store_path)  # a new planning process, same checkpoint
    end = plan(again, logged)
    again.commit(end)
    [position] = store.consumer_positions("t")
    assert (position.reader, position.next_offset) == (logged[READER_KEY], 20)


def test_a_checkpoint_from_before_query_ids_gets_one_and_keeps_it(kind, store, store_path):
    store.publish_many("t", range(30))
    store.commit_offsets("bronze", {"t": 10})  # saved by the name, as before positions
    reader = new_reader(kind, store_path)
    old = {"t": 10}  # a checkpoint written before @store and @reader
    end = plan(reader, old)
    reader.commit(end)
    assert end[READER_KEY] is not None
    [position] = store.consumer_positions("t")
    assert (position.reader, position.next_offset) == (end[READER_KEY], 20)


def test_a_query_without_consumer_saves_nothing_and_carries_its_id(kind, store, store_path):
    store.publish_many("t", range(20))
    options = parse_source_options({"path": store_path, "topic": "t"}, streaming=True)
    reader = READERS[kind](options, default_schema(options))
    start = reader.initialOffset()
    end = plan(reader, start)
    reader.commit(end)
    # The id its batches' plans are recorded under (batch_plans), chosen at the start.
    assert isinstance(start[READER_KEY], str) and end[READER_KEY] == start[READER_KEY]
    assert store.consumers() == [] and store.consumer_positions() == []
