"""A store put back to a copy older than the checkpoint stops the query loudly, at its first
trigger and at every restart after, even once producers have published past the checkpoint's
position (issue 49, "exact resumption, or a loud stop"); a copy no older than the checkpoint
resumes exactly. The readers are called as Spark's planning process calls them, each restart
a new reader: latestOffset(start) (4.2+) or read(start) for the low-latency reader, and the
replay of a planned batch through partitions(start, end) / readBetweenOffsets."""

from __future__ import annotations

import logging
import os
import time

import pytest

from spark_queue.connector.compat import ReadAllAvailable
from spark_queue.connector.offset_json import LAST_READ_KEY, STORE_KEY
from spark_queue.connector.source.auto_reader import SqliteQueueAutoStreamReader
from spark_queue.connector.source.offsets import checkpoint_offsets
from spark_queue.connector.source.simple_reader import SqliteQueueSimpleStreamReader
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema
from spark_queue.connector.source.stream_reader import SqliteQueueStreamReader
from spark_queue.errors import (
    CheckpointError,
    DataLossError,
    OffsetRangeError,
    StoreRewoundError,
)
from spark_queue.store import Store, backup_file

READERS = {
    "default": SqliteQueueStreamReader,
    "auto": SqliteQueueAutoStreamReader,
    "low": SqliteQueueSimpleStreamReader,
}
OLD = [f"old-{i}" for i in range(10)]
COPIED = 5  # events in the backup: the checkpoint (10) is ahead of it


def new_reader(kind: str, path: str, **extra: str):
    options = parse_source_options({"path": path, "topic": "t", **extra}, streaming=True)
    return READERS[kind](options, default_schema(options))


def next_batch(reader, start: dict) -> tuple[dict, list[str]]:
    """``(end, values read)`` of the batch the reader plans from ``start``, as Spark runs it."""
    if isinstance(reader, SqliteQueueSimpleStreamReader):
        rows, end = reader.read(start)
        return end, values(list(rows))
    end = reader.latestOffset(start, ReadAllAvailable())
    if end is start:
        return end, []
    return end, replay(reader, start, end)


def replay(reader, start: dict, end: dict) -> list[str]:
    """The rows of the batch ``[start, end)`` as Spark reads a planned (or replayed) one."""
    if isinstance(reader, SqliteQueueSimpleStreamReader):
        return values(list(reader.readBetweenOffsets(start, end)))
    parts = reader.partitions(start, end)
    cached = reader.getCache(start, end) if isinstance(reader, SqliteQueueAutoStreamReader) \
        else None
    batches = list(cached) if cached is not None else [b for p in parts for b in reader.read(p)]
    return values(batches)


def values(batches) -> list[str]:
    return [v.decode() for batch in batches for v in batch.column("value").to_pylist()]


def publish(path: str, items: list[str]) -> None:
    with Store(path) as store:
        store.publish_many("t", items)


def put_back(copy: str, path: str) -> None:
    """The restore of docs/operations.md: every process stopped, the copy back in place
    (a millisecond later than the last event published: a restore takes longer)."""
    with Store(path) as store:
        last_ms = store.read("t", store.topic("t").bounds()[1] - 1)[0].timestamp_ms
    while time.time() * 1000 < last_ms + 2:  # the clock passes that millisecond
        time.sleep(0.0005)
    directory, name = os.path.split(path)
    for stale in os.listdir(directory):
        if stale.startswith(name):
            os.remove(os.path.join(directory, stale))
    os.rename(copy, path)


@pytest.fixture(params=sorted(READERS))
def kind(request):
    return request.param


@pytest.fixture
def history(kind, store_path, tmp_path):
    """A query read old-0..old-9 (its checkpoint: offset 10); a backup was taken at 5.
    Returns (the batch's start, its end: the checkpoint, the backup's path)."""
    copy = str(tmp_path / "backup.sqlite")
    publish(store_path, OLD[:COPIED])
    backup_file(store_path, copy)
    publish(store_path, OLD[COPIED:])
    reader = new_reader(kind, store_path)
    start = reader.initialOffset()
    checkpoint, read = next_batch(reader, start)
    assert read == OLD and checkpoint_offsets(checkpoint) == {"t": 10}
    assert checkpoint[LAST_READ_KEY]["t"][0] == 9  # the fingerprint of the last event read
    return start, checkpoint, copy


def test_a_backup_older_than_the_checkpoint_stops_the_query_at_its_first_trigger(
    kind, history, store_path
):
    start, checkpoint, copy = history
    put_back(copy, store_path)
    with pytest.raises(StoreRewoundError) as raised:
        next_batch(new_reader(kind, store_path), checkpoint)
    message = str(raised.value)
    assert "offset 10 of topic 't'" in message and "latest offset is 5" in message
    assert "[5, 10)" in message  # the gap
    for way_out in ("no older than the checkpoint", "failOnDataLoss=false",
                    "new checkpointLocation"):
        assert way_out in message
    assert "\n" not in message
    assert isinstance(raised.value, OffsetRangeError)  # what the source raised before
    # The batch Spark planned before the stop, replayed after a restart, stops too.
    with pytest.raises(StoreRewoundError, match="latest offset is 5"):
        replay(new_reader(kind, store_path), start, checkpoint)


def test_it_still_stops_after_100_new_events_and_at_every_restart(kind, history, store_path):
    start, checkpoint, copy = history
    put_back(copy, store_path)
    publish(store_path, [f"new-{i}" for i in range(100)])  # offsets 5..104: past the checkpoint
    for _restart in range(2):
        with pytest.raises(StoreRewoundError) as raised:
            next_batch(new_reader(kind, store_path), checkpoint)
        message = str(raised.value)
        assert "offset 9 of topic 't'" in message and "another event there" in message
        assert "offsets below 10" in message and "latest offset 105" in message
        assert "first event stamped after the one it read is at offset 5" in message
        assert '{"t": 5}' in message
        for way_out in ("no older than the checkpoint", "startingTimestamp",
                        "failOnDataLoss=false"):
            assert way_out in message
    with pytest.raises(StoreRewoundError, match="another event there"):
        replay(new_reader(kind, store_path), start, checkpoint)


def test_a_copy_no_older_than_the_checkpoint_resumes_exactly(kind, history, store_path,
                                                             tmp_path):
    _, checkpoint, _ = history
    newer = str(tmp_path / "newer.sqlite")
    backup_file(store_path, newer)
    publish(store_path, ["lost-with-the-disk"])
    put_back(newer, store_path)
    publish(store_path, ["after-0", "after-1"])
    end, read = next_batch(new_reader(kind, store_path), checkpoint)
    assert read == ["after-0", "after-1"] and checkpoint_offsets(end) == {"t": 12}


def test_fail_on_data_loss_false_goes_on_from_the_end_of_an_older_copy(
    kind, history, store_path, caplog
):
    _, checkpoint, copy = history
    put_back(copy, store_path)
    reader = new_reader(kind, store_path, failOnDataLoss="false")
    with caplog.at_level(logging.WARNING, logger="spark_queue.connector"):
        end, read = next_batch(reader, checkpoint)
    assert read == [] and checkpoint_offsets(end) == {"t": COPIED}  # back to the copy's end
    assert "Going on from offset 5 (failOnDataLoss=false)" in caplog.text
    publish(store_path, ["new-0", "new-1"])  # numbered 5 and 6: read, none skipped
    end, read = next_batch(reader, end)
    assert read == ["new-0", "new-1"] and checkpoint_offsets(end) == {"t": 7}


def test_fail_on_data_loss_false_past_the_checkpoint_skips_with_a_warning(
    kind, history, store_path, caplog
):
    _, checkpoint, copy = history
    put_back(copy, store_path)
    publish(store_path, [f"new-{i}" for i in range(100)])
    reader = new_reader(kind, store_path, failOnDataLoss="false")
    with caplog.at_level(logging.WARNING, logger="spark_queue.connector"):
        end, read = next_batch(reader, checkpoint)
    assert read == [f"new-{i}" for i in range(5, 100)]  # offsets 10..104; 5..9 skipped
    assert "offsets below 10" in caplog.text and "Going on from offset 10" in caplog.text
    assert end[LAST_READ_KEY]["t"][0] == 104  # the new history's fingerprint from now on
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="spark_queue.connector"):
        next_batch(new_reader(kind, store_path), end)  # a restart: no warning, no stop
    assert "failOnDataLoss" not in caplog.text


def test_a_checkpoint_without_fingerprints_gets_the_checks_of_before(kind, history, store_path):
    _, checkpoint, copy = history
    old_form = {STORE_KEY: checkpoint[STORE_KEY], "t": 10}  # written before fingerprints
    put_back(copy, store_path)
    with pytest.raises(StoreRewoundError, match="latest offset is 5"):
        next_batch(new_reader(kind, store_path), old_form)
    publish(store_path, [f"new-{i}" for i in range(100)])
    # Past the checkpoint such a checkpoint cannot tell (docs/operations.md says so); the
    # batch it plans records fingerprints from then on.
    end, read = next_batch(new_reader(kind, store_path), old_form)
    assert read[0] == "new-5" and end[LAST_READ_KEY]["t"][0] == 104


def test_a_fingerprinted_event_that_retention_removed_is_not_a_rewind(kind, store_path):
    publish(store_path, OLD)
    reader = new_reader(kind, store_path)
    checkpoint, _ = next_batch(reader, reader.initialOffset())
    publish(store_path, [f"more-{i}" for i in range(10)])
    with Store(store_path) as store:
        store.topic("t").prune(retention_rows=10, force=True)  # earliest 10: event 9 is gone
    end, read = next_batch(new_reader(kind, store_path), checkpoint)
    assert read == [f"more-{i}" for i in range(10)] and checkpoint_offsets(end) == {"t": 20}
    with Store(store_path) as store:
        store.topic("t").prune(retention_rows=5, force=True)  # and now a gap: [10, 15) removed
    with pytest.raises(DataLossError, match=r"offsets \[10, 15\) were removed by retention"):
        next_batch(new_reader(kind, store_path), checkpoint)


def test_a_topic_deleted_and_created_anew_is_caught_too(kind, history, store_path):
    _, checkpoint, _ = history
    with Store(store_path) as store:
        store.topic("t").delete()
        store.publish_many("t", [f"new-{i}" for i in range(20)])
    with pytest.raises(StoreRewoundError, match="another event there"):
        next_batch(new_reader(kind, store_path), checkpoint)


def test_offsets_are_checked_once_per_planning_process(kind, history, store_path,
                                                       monkeypatch):
    import spark_queue.store

    _, checkpoint, _ = history
    reads = []
    real = spark_queue.store.event_fingerprints
    monkeypatch.setattr(spark_queue.store, "event_fingerprints",
                        lambda store, positions: reads.append(dict(positions))
                        or real(store, positions))
    reader = new_reader(kind, store_path)
    for _poll in range(3):  # idle triggers: no new event
        assert next_batch(reader, checkpoint) == (checkpoint, [])
    assert reads == [{"t": 9}]  # the restart's one check
    publish(store_path, ["x"])
    end, _ = next_batch(reader, checkpoint)
    assert reads[1:] == [{"t": 10}]  # the new end's fingerprint, once
    next_batch(reader, end)
    assert len(reads) == 2


def test_a_malformed_fingerprint_fails_naming_the_key(kind, history, store_path):
    _, checkpoint, _ = history
    damaged = {**checkpoint, LAST_READ_KEY: {"t": "9"}}
    with pytest.raises(CheckpointError, match="'@last'.*edited or damaged"):
        next_batch(new_reader(kind, store_path), damaged)
