"""The stream reader's planning keeps its store open between Spark's calls (an opening
parses the file's schema again) and opens it anew when the path names another file or a
use failed: what it reads is what a fresh opening would read."""

from __future__ import annotations

import os
import pickle

import pytest

from spark_queue.connector.compat import ReadAllAvailable
from spark_queue.connector.source import offsets
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema
from spark_queue.connector.source.stream_reader import SqliteQueueStreamReader
from spark_queue.errors import StoreNotFoundError
from spark_queue.store import Store, backup_file


@pytest.fixture
def opened(monkeypatch):
    """Every store the source opens, in order."""
    seen: list[Store] = []
    real = offsets.open_source_store

    def counting(options):
        store = real(options)
        seen.append(store)
        return store

    monkeypatch.setattr(offsets, "open_source_store", counting)
    return seen


def reader(path: str) -> SqliteQueueStreamReader:
    options = parse_source_options({"path": path, "topic": "t"}, streaming=True)
    return SqliteQueueStreamReader(options, default_schema(options))


def batch(source: SqliteQueueStreamReader, start: dict) -> tuple[dict, int]:
    end = source.latestOffset(start, ReadAllAvailable())
    rows = sum(b.num_rows for p in source.partitions(start, end) for b in source.read(p))
    return end, rows


def test_one_opening_serves_every_batch(tmp_path):
    path = str(tmp_path / "s.sqlite")
    with Store(path) as store:
        store.publish_many("t", [f"e{i}" for i in range(3)])
    source = reader(path)
    start = source.initialOffset()
    kept = []
    for round_ in range(4):
        with Store(path) as store:
            store.publish_many("t", [f"r{round_}-{i}" for i in range(5)])
        start, rows = batch(source, start)
        assert rows == 5 + (3 if round_ == 0 else 0)
        kept.append(source._store._store)
    assert kept[0] is not None and all(store is kept[0] for store in kept)


def test_a_file_moved_into_place_is_opened_anew_and_read_as_a_fresh_reader_would(
        tmp_path, opened):
    path, other = str(tmp_path / "s.sqlite"), str(tmp_path / "other.sqlite")
    with Store(path) as store:
        store.publish_many("t", ["a", "b"])
    source = reader(path)
    start, rows = batch(source, source.initialOffset())
    assert rows == 2
    backup_file(path, other)  # a copy of this store, two events further on
    with Store(other) as store:
        store.publish_many("t", ["c", "d"])
    os.replace(other, path)
    end, rows = batch(source, start)
    assert rows == 2 and end["t"] == 4
    planning = [store for store in opened if store is source._store._store]
    assert len(planning) == 1  # the planning opened the new file once


def test_a_missing_file_fails_naming_the_option_and_drops_the_connection(tmp_path):
    path = str(tmp_path / "s.sqlite")
    with Store(path) as store:
        store.publish("t", "a")
    source = reader(path)
    start, _ = batch(source, source.initialOffset())
    for name in os.listdir(tmp_path):
        os.remove(tmp_path / name)
    with pytest.raises(StoreNotFoundError, match="option 'path'"):
        source.latestOffset(start, ReadAllAvailable())
    assert source._store._store is None


def test_a_pickled_reader_carries_no_connection(tmp_path):
    path = str(tmp_path / "s.sqlite")
    with Store(path) as store:
        store.publish("t", "a")
    source = reader(path)
    batch(source, source.initialOffset())
    copy = pickle.loads(pickle.dumps(source))
    assert copy._store._store is None and copy._store.options == source.options


# -- an executor's Python worker: the store its tasks read on -------------------------


@pytest.fixture
def idle():
    """This process's idle task stores, emptied before and after the test."""
    def empty():
        for kept in list(offsets._IDLE.values()):
            kept.close()
        offsets._IDLE.clear()
    empty()
    yield offsets._IDLE
    empty()


def options_for(path: str):
    return parse_source_options({"path": path, "topic": "t"}, streaming=True)


def test_a_worker_reads_every_task_on_one_opening(tmp_path, opened, idle):
    path = str(tmp_path / "s.sqlite")
    with Store(path) as store:
        store.publish_many("t", ["a"])
    source, executor = reader(path), reader(path)  # the worker's copy, as Spark unpickles
    start = source.initialOffset()
    for round_ in range(4):
        with Store(path) as store:
            store.publish_many("t", [f"r{round_}-{i}" for i in range(3)])
        end = source.latestOffset(start, ReadAllAvailable())
        rows = sum(b.num_rows for p in source.partitions(start, end)
                   for b in executor.read(p))
        assert rows == 3 + (1 if round_ == 0 else 0)
        start = end
    assert len(opened) == 2  # the planning's and the worker's, each once


def test_two_reads_at_once_hold_a_store_each_and_a_failed_one_is_not_kept(tmp_path, idle):
    path = str(tmp_path / "s.sqlite")
    Store(path).close()
    options = options_for(path)
    with offsets.task_store(options) as first, offsets.task_store(options) as second:
        assert first is not second
    kept = idle[path]
    with pytest.raises(RuntimeError), offsets.task_store(options) as store:
        assert store is kept._store
        raise RuntimeError("a task failed")
    assert path not in idle and kept._store is None  # closed, nothing carried on
    with offsets.task_store(options) as store:
        assert store is not None and idle == {}


def test_a_worker_keeps_a_few_stores_and_closes_the_oldest(tmp_path, idle):
    paths = [str(tmp_path / f"s{i}.sqlite") for i in range(offsets._IDLE_MAX + 2)]
    held = []
    for path in paths:
        Store(path).close()
        with offsets.task_store(options_for(path)):
            pass
        held.append(idle[path])
    assert list(idle) == paths[-offsets._IDLE_MAX:]
    assert all(kept._store is None for kept in held[:2])


def test_a_forked_child_never_uses_nor_closes_its_parents_connections(tmp_path, idle,
                                                                      monkeypatch):
    path = str(tmp_path / "s.sqlite")
    Store(path).close()
    options = options_for(path)
    with offsets.task_store(options) as parents:
        pass
    monkeypatch.setattr(offsets, "_IDLE_PID", -1)  # as a child sees its parent's pid
    monkeypatch.setattr(offsets, "_INHERITED", [])
    with offsets.task_store(options) as childs:
        assert childs is not parents
    assert [kept._store for kept in offsets._INHERITED] == [parents]  # left open
    parents.close()
