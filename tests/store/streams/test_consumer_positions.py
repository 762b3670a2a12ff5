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
    assert "stoppedquery at 2 (saved " in warning and "fastquery at 9 (saved " in warning
    assert warning.index("stoppedquery at 2") < warning.index("fastquery at 9")
    assert "--query stoppedquery" in warning


def saved_long_ago(store, reader):
    """As if ``reader`` last saved its position an hour ago (its query stopped then)."""
    with store.write() as conn:
        conn.execute("UPDATE sq_consumer_positions SET updated_ms = updated_ms - 3600000 "
                     "WHERE reader = ?", (reader,))


def test_a_new_querys_first_checkpointed_position_takes_over_the_stopped_one_it_lands_on(
        store):
    """Issue #59: run 1 stopped at 80 and its checkpoint was deleted; run 2 starts from the
    name (committed: 80). Once run 2's start is checkpointed, run 1's position goes: it no
    longer holds the name or retention, and run 3 would start where run 2 got to."""
    store.publish_many("t", range(200))
    store.commit_offsets("bronze", {"t": 80}, reader="run1")
    saved_long_ago(store, "run1")
    assert store.committed_offsets("bronze") == {"t": 80}
    store.commit_offsets("bronze", {"t": 80}, reader="run2", confirmed=False)
    assert {p.reader for p in store.consumer_positions()} == {"run1", "run2"}
    store.commit_offsets("bronze", {"t": 80}, reader="run2",  # its first planned batch
                         hand_over=True)  # it resumed from the name (committed)
    assert [p.reader for p in store.consumer_positions()] == ["run2"]
    store.commit_offsets("bronze", {"t": 160}, reader="run2")
    assert store.committed_offsets("bronze") == {"t": 160}
    assert store.topic("t").prune(retention_rows=1)[0].earliest_after == 160


def test_a_running_query_at_the_same_offset_is_never_taken_over(store):
    """Two live queries under one name, the second started from the name while the first
    runs: the first saved after the second started, so both positions stay."""
    store.publish_many("t", range(100))
    store.commit_offsets("bronze", {"t": 40}, reader="first")
    store.commit_offsets("bronze", {"t": 40}, reader="second", confirmed=False)
    saved_long_ago(store, "second")  # its start came before the first query's last save
    store.commit_offsets("bronze", {"t": 40}, reader="second")
    assert {p.reader for p in store.consumer_positions()} == {"first", "second"}


def test_a_query_that_did_not_resume_from_the_name_takes_nothing_over(store):
    """docs/reading.md's fan-out: two queries started together at the earliest offset are
    two live queries, whatever their saves' order (only startingOffsets=committed hands
    over)."""
    store.publish_many("t", range(100))
    store.commit_offsets("bronze", {"t": 0}, reader="bronze-q")
    saved_long_ago(store, "bronze-q")
    store.commit_offsets("bronze", {"t": 0}, reader="feed-q", confirmed=False)
    store.commit_offsets("bronze", {"t": 0}, reader="feed-q")
    assert {p.reader for p in store.consumer_positions()} == {"bronze-q", "feed-q"}


def test_a_new_query_never_takes_over_a_position_it_did_not_start_on(store):
    """Started elsewhere (latest, JSON): a stopped query below or above keeps its hold."""
    store.publish_many("t", range(100))
    store.commit_offsets("bronze", {"t": 30}, reader="stopped")
    saved_long_ago(store, "stopped")
    store.commit_offsets("bronze", {"t": 100}, reader="new", confirmed=False)
    store.commit_offsets("bronze", {"t": 100}, reader="new")
    assert {p.reader for p in store.consumer_positions()} == {"stopped", "new"}
    assert store.topic("t").prune(retention_rows=1)[0].earliest_after == 30


def test_a_position_not_saved_for_a_week_holds_nothing_and_shows_its_age(store, monkeypatch):
    store.publish_many("t", range(100))
    store.commit_offsets("bronze", {"t": 90}, reader="live")
    store.commit_offsets("bronze", {"t": 10}, reader="gone")
    saved_long_ago(store, "gone")
    assert store.topic("t").prune(retention_rows=1)[0].earliest_after == 10
    held = store.housekeeping.held_back()
    assert [(h.consumer, h.query) for h in held] == [] or held[0].query == "gone"
    monkeypatch.setattr(consumer_positions, "STOPPED_POSITION_HOLD_MS", 1_800_000)  # 30 min
    holds = {p.reader: p.holds for p in store.consumer_positions()}
    assert holds == {"live": True, "gone": False}
    # The name's offset is its holding queries' at their next save; retention goes on now.
    assert store.topic("t").prune(retention_rows=1)[0].earliest_after == 90
    store.commit_offsets("bronze", {"t": 95}, reader="live")
    assert store.committed_offsets("bronze") == {"t": 95}


def test_the_held_back_report_names_the_query_that_holds_and_its_age(store):
    store.topic("t").configure(retention_rows=1)
    store.publish_many("t", range(50))
    store.commit_offsets("bronze", {"t": 49}, reader="live")
    store.commit_offsets("bronze", {"t": 5}, reader="gone")
    saved_long_ago(store, "gone")
    [held] = store.housekeeping.held_back()
    assert (held.consumer, held.events, held.query) == ("bronze", 44, "gone")
    assert held.query_saved_ms >= 3_600_000
    run = store.housekeeping.run()
    assert run.held_back[0].query == "gone"
    assert store.housekeeping.status().last_run.held_back[0].query == "gone"
