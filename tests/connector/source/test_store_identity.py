"""A checkpoint knows its store: the source's offsets carry the store's identity, and a
checkpoint written against another store file at the same path (re-created after a
cluster restart wiped the driver's disk) is refused by name, whatever the new file's
length, on every path Spark hands checkpoint offsets back (as test_foreign_checkpoints.py
walks them). A copy of the same store resumes exactly; a checkpoint older than store
identities keeps working and records the identity from its next batch."""

from __future__ import annotations

import os

import pytest

from spark_queue.connector.compat import ReadAllAvailable
from spark_queue.connector.offset_json import LAST_READ_KEY, READER_KEY, STORE_KEY
from spark_queue.connector.source.auto_reader import SqliteQueueAutoStreamReader
from spark_queue.connector.source.simple_reader import SqliteQueueSimpleStreamReader
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema
from spark_queue.connector.source.stream_reader import SqliteQueueStreamReader
from spark_queue.errors import CheckpointError
from spark_queue.store import Store, backup_file, store_id

READERS = {
    "default": SqliteQueueStreamReader,
    "auto": SqliteQueueAutoStreamReader,
    "low": SqliteQueueSimpleStreamReader,
}
ORIGINAL = 10
# One line naming both stores and the two ways out.
REFUSAL = r"^sqliteq source: the checkpoint holds positions in store [0-9a-f]{32}, but 'path' .*" \
          r"is store [0-9a-f]{32}, another file.*put back that store's copy.*new checkpointLocation"


def new_reader(kind: str, path: str, consumer: str = "c"):
    options = parse_source_options({"path": path, "topic": "t", "consumer": consumer},
                                   streaming=True)
    return READERS[kind](options, default_schema(options))


def planned_end(reader, start: dict) -> dict:
    """The end of the batch the reader plans from ``start``, as Spark logs it."""
    if isinstance(reader, SqliteQueueSimpleStreamReader):
        rows, end = reader.read(start)
        list(rows)
        return end
    end = reader.latestOffset(start, ReadAllAvailable())
    reader.partitions(start, end)
    return end


def positions(offsets: dict) -> dict:
    """The offsets without the last events' fingerprints (lineage's, tested beside it) and
    the query's id (``consumer`` set: test_shared_consumer.py)."""
    return {key: value for key, value in offsets.items() if key not in (LAST_READ_KEY, READER_KEY)}


def recreate(path: str, events: int) -> None:
    """The driver's disk wiped and the store created anew at the same path."""
    directory = os.path.dirname(path)
    for name in os.listdir(directory):
        if name.startswith(os.path.basename(path)):
            os.remove(os.path.join(directory, name))
    with Store(path) as store:
        store.publish_many("t", range(events))


@pytest.fixture(params=sorted(READERS))
def kind(request):
    return request.param


@pytest.fixture
def checkpoint(kind, store, store_path):
    """The offsets a query logged after reading the original store's 10 events."""
    store.publish_many("t", range(ORIGINAL))
    reader = new_reader(kind, store_path)
    end = planned_end(reader, reader.initialOffset())
    assert positions(end) == {STORE_KEY: store_id(store), "t": ORIGINAL}
    return end


@pytest.mark.parametrize("events", [5, ORIGINAL, 25], ids=["shorter", "as-long", "longer"])
def test_a_checkpoint_of_another_store_file_is_refused_whatever_its_length(
    kind, checkpoint, store, store_path, events
):
    store.close()
    recreate(store_path, events)
    reader = new_reader(kind, store_path)
    with pytest.raises(CheckpointError, match=REFUSAL) as raised:
        planned_end(reader, checkpoint)  # a restart: Spark hands the checkpoint's end back
    assert "\n" not in str(raised.value)
    if isinstance(reader, SqliteQueueSimpleStreamReader):
        with pytest.raises(CheckpointError, match=REFUSAL):
            list(reader.readBetweenOffsets(checkpoint, checkpoint))  # a replayed batch
    else:  # pyspark 4.0/4.1: the checkpoint's range reaches partitions() first
        with pytest.raises(CheckpointError, match=REFUSAL):
            reader.partitions(checkpoint, checkpoint)
    reader.commit(checkpoint)  # advisory: nothing saved for another file's positions
    with Store(store_path) as new:
        assert new.committed_offsets("c") == {}


def test_a_new_checkpoint_starts_over_on_the_new_file(kind, checkpoint, store, store_path):
    store.close()
    recreate(store_path, 25)
    reader = new_reader(kind, store_path)
    start = reader.initialOffset()
    with Store(store_path) as new:
        assert positions(planned_end(reader, start)) == {STORE_KEY: store_id(new), "t": 25}


def test_a_copy_of_the_same_store_put_back_resumes_exactly(
    kind, checkpoint, store, store_path, tmp_path
):
    copy = str(tmp_path / "backup.sqlite")
    backup_file(store_path, copy)
    store.close()
    recreate(store_path, 3)
    os.remove(store_path)
    os.rename(copy, store_path)
    with Store(store_path) as restored:
        restored.publish_many("t", range(4))
    reader = new_reader(kind, store_path)
    assert positions(planned_end(reader, checkpoint)) == {**positions(checkpoint),
                                                          "t": ORIGINAL + 4}


def test_a_checkpoint_without_an_identity_keeps_working_and_records_it_next(
    kind, checkpoint, store, store_path
):
    old = {"t": ORIGINAL}  # what the source logged before stores had an identity
    reader = new_reader(kind, store_path)
    if not isinstance(reader, SqliteQueueSimpleStreamReader):
        assert reader.latestOffset(old, ReadAllAvailable()) is old  # nothing new: no batch
    store.publish_many("t", range(2))
    assert positions(planned_end(reader, old)) == {STORE_KEY: store_id(store),
                                                   "t": ORIGINAL + 2}
