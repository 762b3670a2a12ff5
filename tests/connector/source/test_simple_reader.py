"""The low-latency reader's planning process, called directly (no Spark session).

It keeps one connection between polls and re-reads bounds only when another
connection committed; these tests guard what that must never change: every
commit by another writer is seen at the next poll, a pickled copy (Spark
ships one to replay a batch) works, and a failed read does not leave a dead
connection behind.
"""

from __future__ import annotations

import pickle

import pytest

from spark_queue.connector.source.offsets import checkpoint_offsets as topics
from spark_queue.connector.source.simple_reader import SqliteQueueSimpleStreamReader
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema
from spark_queue.errors import StoreError


def make_reader(store_path, **options):
    opts = parse_source_options(
        {"path": store_path, "latencyMode": "low", **options}, streaming=True
    )
    return SqliteQueueSimpleStreamReader(opts, default_schema(opts))


def values(batches):
    return [v for batch in batches for v in batch.column("value").to_pylist()]


def test_every_commit_by_another_connection_is_seen_at_the_next_poll(store, store_path):
    store.publish("t", b"first")
    reader = make_reader(store_path, topic="t")
    start = reader.initialOffset()
    rows, end = reader.read(start)
    assert (values(rows), topics(end)) == ([b"first"], {"t": 1})
    for i in range(20):  # idle polls, then one publish each: none may be missed
        assert reader.read(end)[1] == end
        store.publish("t", f"e{i}".encode())
        rows, after = reader.read(end)
        assert (values(rows), topics(after)) == ([f"e{i}".encode()], {"t": end["t"] + 1})
        end = after


def test_a_new_topic_matching_the_pattern_is_seen_while_idle(store, store_path):
    store.publish("a.1", b"x")
    reader = make_reader(store_path, subscribePattern=r"a\..*")
    end = reader.read(reader.initialOffset())[1]
    assert reader.read(end)[1] == end
    store.publish("a.2", b"y")
    rows, after = reader.read(end)
    assert values(rows) == [b"y"] and topics(after) == {"a.1": 1, "a.2": 1}


def test_a_pickled_reader_replays_a_batch_on_its_own_connection(store, store_path):
    store.publish_many("t", [b"a", b"b", b"c"])
    reader = make_reader(store_path, topic="t")
    start = reader.initialOffset()
    _, end = reader.read(start)  # the original now holds a connection
    copy = pickle.loads(pickle.dumps(reader))
    assert values(copy.readBetweenOffsets(start, end)) == [b"a", b"b", b"c"]
    store.publish("t", b"d")
    assert values(reader.read(end)[0]) == [b"d"]  # the original is unaffected


def test_after_a_store_error_the_next_poll_reopens_and_misses_nothing(
    store, store_path, monkeypatch
):
    store.publish("t", b"a")
    reader = make_reader(store_path, topic="t")
    end = reader.read(reader.initialOffset())[1]
    held = reader._store

    def broken():
        raise StoreError("disk I/O error (simulated)")

    monkeypatch.setattr(held, "topics", broken)
    store.publish("t", b"b")
    with pytest.raises(StoreError):
        reader.read(end)
    rows, after = reader.read(end)
    assert reader._store is not held
    assert (values(rows), topics(after)) == ([b"b"], {"t": 2})


def test_a_replayed_low_latency_batch_ships_with_its_plan(store, store_path):
    """After a restart Spark replays the checkpoint's last batch: its rows travel with the
    plan, read on the driver, so no executor opens the file (a cluster's cannot)."""
    from spark_queue.connector.datasource import SqliteQueueDataSource

    store.publish_many("a", [f"v{i}".encode() for i in range(30)])
    source = SqliteQueueDataSource({"path": store_path, "topic": "a", "latencyMode": "low"})
    reader = source.streamReader(source.schema())  # a fresh process: nothing cached
    reader.partitions({"a": 5}, {"a": 25})
    replayed = list(reader.getCache({"a": 5}, {"a": 25}))
    assert [o for b in replayed for o in b.column("offset").to_pylist()] == list(range(5, 25))
    assert [v for b in replayed for v in b.column("value").to_pylist()][:1] == [b"v5"]


def test_only_the_two_documented_readers_subclass_pysparks_private_wrapper():
    """pyspark's _SimpleStreamReaderWrapper is private: each subclass is a debt named in
    connector/compat.py with the reason it must exist. A third would be a new one."""
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[3] / "spark_queue"
    found = sorted(
        f"{path.relative_to(root).as_posix()}:{node.name}"
        for path in root.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        and any("PlanShippingStreamReader" in ast.unparse(b) or "_SimpleStreamReaderWrapper"
                in ast.unparse(b) for b in node.bases)
    )
    assert found == ["connector/source/auto_reader.py:SqliteQueueAutoStreamReader",
                     "connector/source/simple_reader.py:SqliteQueueLowLatencyStreamReader"]
    compat = (root / "connector" / "compat.py").read_text(encoding="utf-8")
    assert all(name.split(":")[1] in compat for name in found)
