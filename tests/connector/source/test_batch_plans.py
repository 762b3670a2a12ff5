"""A batch planned again from its start (its ``offsets/N`` torn by a power cut and removed
by the repair) ends where it ended, though more events arrived: the batch a sink's ledger
holds is the batch replayed (issue 54). Readers driven as Spark's planning process drives
them; tests/end_to_end/test_checkpoint_power_cut.py runs the real thing."""

from __future__ import annotations

import pytest

from spark_queue.connector.offset_json import READER_KEY
from spark_queue.connector.source.offsets import checkpoint_offsets
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema
from tests.connector.source.test_shared_consumer import READERS, plan


@pytest.fixture(params=sorted(READERS))
def kind(request):
    return request.param


def new_reader(kind: str, path: str, consumer: str | None = "bronze"):
    given = {"path": path, "topic": "t", "startingOffsets": "earliest", "maxRowsPerTrigger": "10"}
    if consumer is not None:
        given["consumer"] = consumer
    options = parse_source_options(given, streaming=True)
    return READERS[kind](options, default_schema(options))


def short_batch(kind: str, store, path: str, consumer: str | None = "bronze"):
    """A query's batch 0 (3 rows) and batch 1 (3 rows, short of maxRowsPerTrigger=10),
    then 4 more events: ``(batch 0's end, batch 1's end)``."""
    store.publish_many("t", range(3))
    reader = new_reader(kind, path, consumer)
    first = plan(reader, reader.initialOffset())
    reader.commit(first)
    store.publish_many("t", range(3, 6))
    second = plan(reader, first)
    store.publish_many("t", range(6, 10))
    return first, second


def test_a_batch_planned_again_after_a_restart_ends_where_it_ended(kind, store, store_path):
    first, second = short_batch(kind, store, store_path)
    assert checkpoint_offsets(second) == {"t": 6}
    restarted = new_reader(kind, store_path)  # a new planning process, same checkpoint
    again = plan(restarted, first)
    assert again == second
    assert checkpoint_offsets(plan(restarted, again)) == {"t": 10}  # then on as before


def test_an_available_now_run_replays_the_recorded_batch_first(store, store_path):
    first, second = short_batch("default", store, store_path)
    restarted = new_reader("default", store_path)
    restarted.prepareForTriggerAvailableNow()
    assert plan(restarted, first) == second


def test_a_query_without_a_consumer_replays_its_batch_too(kind, store, store_path):
    first, second = short_batch(kind, store, store_path, consumer=None)
    assert checkpoint_offsets(second) == {"t": 6} and READER_KEY in first
    restarted = new_reader(kind, store_path, None)
    assert plan(restarted, first) == second
    [(consumer,)] = store.conn.execute("SELECT DISTINCT consumer FROM sq_planned_batches")
    assert consumer == ""  # recorded under no name; nothing saved as a consumer's position
    assert store.consumers() == []


def test_the_id_a_checkpoint_carries_is_kept_across_restarts(store, store_path):
    first, second = short_batch("default", store, store_path, consumer=None)
    restarted = new_reader("default", store_path, None)
    assert plan(restarted, second)[READER_KEY] == second[READER_KEY] == first[READER_KEY]


def test_offsets_without_an_id_plan_as_before_and_get_one(store, store_path):
    first, _ = short_batch("default", store, store_path, consumer=None)
    old = {key: value for key, value in first.items() if key != READER_KEY}
    end = plan(new_reader("default", store_path, None), old)
    assert checkpoint_offsets(end) == {"t": 10} and isinstance(end[READER_KEY], str)


def test_offsets_written_before_reader_ids_plan_as_before(store, store_path):
    first, _ = short_batch("default", store, store_path)
    first = {key: value for key, value in first.items() if key != READER_KEY}
    assert checkpoint_offsets(plan(new_reader("default", store_path), first)) == {"t": 10}


def test_before_pyspark_4_2_the_replanned_batch_ends_where_it_ended(store, store_path):
    """pyspark < 4.2 calls latestOffset() without the start: the reader follows it from
    the empty range Spark plans at the checkpoint's offsets on a restart."""
    first, second = short_batch("default", store, store_path)
    restarted = new_reader("default", store_path)
    restarted.partitions(first, first)
    assert restarted.latestOffset() == second


def test_a_store_kept_busy_runs_the_batch_unrecorded(store, store_path, monkeypatch, caplog):
    from spark_queue.errors import StoreBusyError

    def busy(*args):
        raise StoreBusyError("database is locked")

    monkeypatch.setattr("spark_queue.store.record_planned_end", busy)
    store.publish_many("t", range(3))
    reader = new_reader("default", store_path)
    assert checkpoint_offsets(plan(reader, reader.initialOffset())) == {"t": 3}
    assert "could not record the batch" in caplog.text


@pytest.mark.parametrize("consumer", ["bronze", None])
def test_a_first_batch_torn_is_planned_again_to_its_end(kind, store, store_path, consumer):
    """A torn offsets/0 leaves Spark no start to hand back: it asks initialOffset again
    and the source chooses a new id; the first batch is recorded under its options too."""
    store.publish_many("t", range(3))
    reader = new_reader(kind, store_path, consumer)
    first = plan(reader, reader.initialOffset())
    store.publish_many("t", range(3, 7))
    restarted = new_reader(kind, store_path, consumer)
    start = restarted.initialOffset()
    assert start[READER_KEY] != first[READER_KEY] and checkpoint_offsets(start) == {"t": 0}
    again = plan(restarted, start)
    assert checkpoint_offsets(again) == {"t": 3} and again[READER_KEY] == start[READER_KEY]
    assert checkpoint_offsets(plan(restarted, again)) == {"t": 7}
    # Other options are another query's: its first batch is its own plan.
    options = parse_source_options({"path": store_path, "topic": "t",
                                    "startingOffsets": "earliest"}, streaming=True)
    other = READERS[kind](options, default_schema(options))
    assert checkpoint_offsets(plan(other, other.initialOffset())) == {"t": 7}
