"""The end a query planned from a start is the end it gets again (issue 54), and the
record of plans stays small."""

from __future__ import annotations

from spark_queue.defaults import PLANNED_BATCH_HOLD_MS, PLANNED_BATCHES_KEPT
from spark_queue.store import planned_end, record_planned_end
from spark_queue.store.streams import planned_batches


def _count(store) -> int:
    return store.conn.execute("SELECT count(*) FROM sq_planned_batches").fetchall()[0][0]


def test_a_batch_planned_again_from_its_start_ends_where_it_ended(store):
    store.publish_many("t", range(5))
    record_planned_end(store, "bronze", "q1", {"t": 0}, {"t": 5})
    store.publish_many("t", range(5, 12))  # more events arrive before the batch is replanned
    assert planned_end(store, "q1", {"t": 0}) == {"t": 5}
    # Another query, another start: nothing recorded.
    assert planned_end(store, "q2", {"t": 0}) is None
    assert planned_end(store, "q1", {"t": 5}) is None
    # A start names its topics in any order: the same start.
    record_planned_end(store, "bronze", "q1", {"u": 0, "t": 5}, {"t": 12, "u": 0})
    assert planned_end(store, "q1", {"t": 5, "u": 0}) == {"t": 12, "u": 0}
    # Recording again for a start replaces the end (a plan the store could no longer serve).
    record_planned_end(store, "bronze", "q1", {"t": 0}, {"t": 3})
    assert planned_end(store, "q1", {"t": 0}) == {"t": 3}


def test_the_plan_is_fsynced_and_the_connection_keeps_its_level(store):
    assert store.conn.execute("PRAGMA synchronous").fetchall()[0][0] == 1  # normal
    record_planned_end(store, "bronze", "q1", {"t": 0}, {"t": 1})
    assert store.conn.execute("PRAGMA synchronous").fetchall()[0][0] == 1


def test_a_querys_plans_are_bounded_to_its_newest_and_its_recent(store, monkeypatch):
    clock = [1_000_000_000]
    monkeypatch.setattr(planned_batches, "now_ms", lambda: clock[0])
    store.publish("t", 0)
    store.commit_offsets("bronze", {"t": 0}, reader="live")
    for batch in range(20):
        record_planned_end(store, "bronze", "live", {"t": batch}, {"t": batch + 1})
        clock[0] += 1_000
    assert _count(store) == 20  # all within the hold: a cut may tear several
    record_planned_end(store, "bronze", "gone", {"t": 0}, {"t": 1})  # no position of its own
    clock[0] += PLANNED_BATCH_HOLD_MS + 1
    record_planned_end(store, "bronze", "live", {"t": 20}, {"t": 21})
    kept = [start for (start,) in store.conn.execute(
        "SELECT start_offsets FROM sq_planned_batches WHERE reader = 'live'")]
    assert len(kept) == PLANNED_BATCHES_KEPT  # the newest few, whatever their age
    assert planned_end(store, "live", {"t": 20}) == {"t": 21}
    assert planned_end(store, "live", {"t": 19}) == {"t": 20}
    assert planned_end(store, "gone", {"t": 0}) is None  # the name no longer has that query


def test_deleting_a_consumer_or_its_reader_deletes_their_plans(store):
    store.publish_many("t", range(3))
    for reader in ("a", "b"):
        store.commit_offsets("bronze", {"t": 1}, reader=reader)
        record_planned_end(store, "bronze", reader, {"t": 1}, {"t": 3})
    record_planned_end(store, "silver", "c", {"t": 0}, {"t": 3})
    store.delete_consumer("bronze", reader="a")
    assert planned_end(store, "a", {"t": 1}) is None
    assert planned_end(store, "b", {"t": 1}) == {"t": 3}
    store.delete_consumer("bronze")
    assert planned_end(store, "b", {"t": 1}) is None
    assert planned_end(store, "c", {"t": 0}) == {"t": 3}


def test_an_unnamed_querys_plans_go_once_it_is_idle_past_the_hold(store, monkeypatch):
    """No consumer position names a query without a consumer: its plans outlive the short
    hold (a box may stay down for hours before its checkpoint is repaired) and go once its
    newest plan is UNNAMED_PLANS_HOLD_MS old, at the next plan any query records."""
    clock = [1_000_000_000]
    monkeypatch.setattr(planned_batches, "now_ms", lambda: clock[0])
    monkeypatch.setattr(planned_batches, "UNNAMED_PLANS_HOLD_MS", 3_600_000)  # a short setting
    store.publish_many("t", range(10))
    for batch in range(6):
        record_planned_end(store, None, "stopped", {"t": batch}, {"t": batch + 1})
    record_planned_end(store, None, "idle", {"t": 0}, {"t": 2})
    clock[0] += PLANNED_BATCH_HOLD_MS + 1
    record_planned_end(store, None, "live", {"t": 0}, {"t": 9})
    record_planned_end(store, "bronze", "named", {"t": 0}, {"t": 9})
    # Past the short hold, under the long one: every query keeps its newest plans.
    assert planned_end(store, "stopped", {"t": 5}) == {"t": 6}
    assert planned_end(store, "idle", {"t": 0}) == {"t": 2}
    record_planned_end(store, None, "idle", {"t": 2}, {"t": 3})  # it plans again: kept
    clock[0] += 3_600_000 - PLANNED_BATCH_HOLD_MS
    record_planned_end(store, None, "live", {"t": 9}, {"t": 10})
    assert planned_end(store, "stopped", {"t": 5}) is None  # idle past the hold: all gone
    assert {reader for (reader,) in store.conn.execute(
        "SELECT reader FROM sq_planned_batches")} == {"idle", "live", "named"}
    assert planned_end(store, "idle", {"t": 2}) == {"t": 3}
    assert planned_end(store, "named", {"t": 0}) == {"t": 9}  # a name's queries: its rules
    # The query's own plans never go by this rule, however long it was stopped.
    clock[0] += 10 * 3_600_000
    record_planned_end(store, None, "idle", {"t": 3}, {"t": 4})
    assert planned_end(store, "idle", {"t": 2}) == {"t": 3}
    assert planned_end(store, "live", {"t": 9}) is None


def test_an_unnamed_query_needs_no_consumer_name(store):
    record_planned_end(store, None, "q1", {"t": 0}, {"t": 1})
    assert planned_end(store, "q1", {"t": 0}) == {"t": 1}
    assert store.consumers() == []
