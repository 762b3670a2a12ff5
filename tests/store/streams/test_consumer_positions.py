"""Positions of several queries under one consumer name: retention waits for the slowest."""

from __future__ import annotations

from spark_queue.store.streams import consumer_positions


def test_two_positions_under_one_name_hold_retention_at_the_lower(store):
    store.publish_many("t", range(100))
    store.commit_offsets("bronze", {"t": 90}, reader="fast")
    store.commit_offsets("bronze", {"t": 20}, reader="slow")
    # The faster query saving again never releases what the slower one has not read.
    store.commit_offsets("bronze", {"t": 100}, reader="fast")
    assert store.committed_offsets("bronze") == {"t": 20}
    [result] = store.topic("t").prune(retention_rows=5)
    assert (result.earliest_after, result.held_by) == (20, "bronze")
    positions = {(p.reader, p.next_offset) for p in store.consumer_positions("t")}
    assert positions == {("fast", 100), ("slow", 20)}
    # The slower query's own saves stay monotonic and move the name's offset.
    store.commit_offsets("bronze", {"t": 60}, reader="slow")
    store.commit_offsets("bronze", {"t": 30}, reader="slow")
    assert store.committed_offsets("bronze") == {"t": 60}
    assert store.topic("t").prune(retention_rows=5)[0].earliest_after == 60


def test_a_stopped_querys_position_holds_until_deleted(store):
    store.publish_many("t", range(50))
    store.commit_offsets("bronze", {"t": 50}, reader="live")
    store.commit_offsets("bronze", {"t": 10}, reader="stopped")
    assert store.topic("t").prune(retention_rows=1)[0].earliest_after == 10
    assert store.delete_consumer("bronze", "t", reader="stopped") == 1
    assert store.committed_offsets("bronze") == {"t": 50}
    assert store.topic("t").prune(retention_rows=1)[0].earliest_after == 49
    # Deleting the last position of a name deletes the name's offset with it.
    assert store.delete_consumer("bronze", reader="live") == 1
    assert store.committed_offsets("bronze") == {}


def test_a_reset_or_delete_of_the_name_moves_every_position(store):
    store.publish_many("t", range(30))
    store.commit_offsets("bronze", {"t": 25}, reader="a")
    store.commit_offsets("bronze", {"t": 15}, reader="b")
    store.commit_offsets("bronze", {"t": 5}, reset=True)
    assert {p.next_offset for p in store.consumer_positions()} == {5}
    assert store.delete_consumer("bronze") == 1
    assert store.consumer_positions() == [] and store.committed_offsets("bronze") == {}


def test_an_unconfirmed_start_position_holds_only_while_refreshed(store, monkeypatch):
    store.publish_many("t", range(40))
    store.commit_offsets("bronze", {"t": 40}, reader="running")
    store.commit_offsets("bronze", {"t": 0}, reader="starting", confirmed=False)
    assert store.topic("t").prune(retention_rows=1)[0].earliest_after == 0
    # A start whose process died before its first checkpoint is never resumed under its id.
    monkeypatch.setattr(consumer_positions, "UNCONFIRMED_POSITION_HOLD_MS", -1)
    assert store.topic("t").prune(retention_rows=1)[0].earliest_after == 39
    store.commit_offsets("bronze", {"t": 40}, reader="running")
    assert [p.reader for p in store.consumer_positions()] == ["running"]
    assert store.committed_offsets("bronze") == {"t": 40}


def test_deleting_a_topic_forgets_its_positions(store):
    store.publish_many("t", range(3))
    store.commit_offsets("bronze", {"t": 1}, reader="a")
    store.topic("t").delete()
    assert store.consumer_positions() == []


def test_each_position_is_a_metric_and_check_names_the_holder(store, monkeypatch):
    from spark_queue import defaults
    from spark_queue.metrics import render

    store.topic("t").configure(retention_rows=1)
    store.publish_many("t", range(10))
    store.commit_offsets("bronze", {"t": 9}, reader="fastquery")
    store.commit_offsets("bronze", {"t": 2}, reader="stoppedquery")
    text = render(store)
    assert 'sqliteq_consumer_query_lag{consumer="bronze",topic="t",query="stoppedquery"} 8' in text
    assert 'sqliteq_consumer_lag{consumer="bronze",topic="t"} 8' in text
    monkeypatch.setattr(defaults, "HELD_BACK_WARN_MS", -1)
    [warning] = store.check().warnings
    assert "stoppedquery at 2, fastquery at 9" in warning
    assert "--query stoppedquery" in warning
