"""Offsets stay dense at the seams of a transaction: savepoints the caller's SQL opens and
rolls back to, trigger publishes through the sq_publish view, and the Store's next publish
after them. The next offset comes from the table inside the writing transaction, never
from a row kept between calls (spark_queue/store/streams/event_log.py, write_events)."""

from __future__ import annotations

import pytest

from spark_queue.errors import CorruptStoreError, SparkQueueError
from spark_queue.store import Store
from spark_queue.worker import Worker, WorkerJob


def offsets(store: Store, topic: str) -> list[int]:
    return [e.offset for e in store.read(topic)]


def test_a_publish_rolled_back_to_a_savepoint_leaves_no_hole(store):
    store.publish("orders", "before")  # the Store keeps the topic's row from here
    with store.transaction() as tx:
        assert tx.publish("orders", "line 1") == 1
        tx.execute("SAVEPOINT item")
        assert tx.publish("orders", "line 2, cancelled") == 2
        tx.execute("ROLLBACK TO item")
        tx.execute("RELEASE item")
        assert tx.publish("orders", "line 2, again") == 2
    assert offsets(store, "orders") == [0, 1, 2]
    assert [e.value for e in store.read("orders")] == ["before", "line 1", "line 2, again"]
    assert store.publish("orders", "after") == 3
    assert store.check().ok


def test_publish_many_after_a_rolled_back_savepoint_is_dense(store):
    with store.transaction() as tx:
        tx.execute("SAVEPOINT a")
        assert tx.publish_many("t", ["x", "y"]) == range(0, 2)
        tx.execute("ROLLBACK TO a")
        assert tx.publish("t", "z") == 0
        assert tx.publish_many("t", ["u", "v"]) == range(1, 3)
    assert offsets(store, "t") == [0, 1, 2] and store.check().ok


def test_the_store_s_next_publish_follows_a_trigger_publish_in_the_same_transaction(store):
    store.publish("orders", "kept")
    with store.transaction() as tx:
        assert tx.publish("orders", "ours") == 1
        tx.execute("INSERT INTO sq_publish (topic, value) VALUES ('orders', 'by the view')")
    assert store.publish("orders", "next") == 3
    assert offsets(store, "orders") == [0, 1, 2, 3] and store.check().ok


def test_a_publish_after_a_trigger_publish_rolled_back_to_a_savepoint(store):
    store.publish("t", "kept")
    with store.transaction() as tx:
        tx.execute("SAVEPOINT s")
        tx.execute("INSERT INTO sq_publish (topic, value) VALUES ('t', 'gone')")
        assert tx.publish("t", "also gone") == 2
        tx.execute("ROLLBACK TO s")
        assert tx.publish("t", "kept too") == 1
    assert store.publish("t", "last") == 2
    assert offsets(store, "t") == [0, 1, 2] and store.check().ok


def test_a_rolled_back_transaction_leaves_the_store_s_next_publish_dense(store):
    store.publish("t", "a")
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.publish("t", "b")
        raise RuntimeError("roll back")
    assert store.publish("t", "c") == 1
    assert offsets(store, "t") == [0, 1]


def test_a_stray_row_above_next_offset_is_a_named_error_not_a_raw_constraint(store):
    store.publish("t", "a")
    # A careless client inserts past next_offset without advancing it.
    store.conn.execute(
        "INSERT INTO sq_events (topic_id, offset, ts_ms, value, value_type) "
        "SELECT id, 1, 0, 'stray', 1 FROM sq_topics WHERE name = 't'")
    with pytest.raises(CorruptStoreError, match="'t' holds events at offsets 1"):
        store.publish("t", "b")
    with pytest.raises(SparkQueueError, match="'t'"), store.transaction() as tx:
        tx.publish("t", "c")


def test_a_handler_s_savepoint_rolled_back_inside_job_transaction_leaves_no_hole(store,
                                                                                 store_path):
    store.publish("results", "first")
    store.queue("q").enqueue_many(range(3))

    def handler(job: WorkerJob) -> None:
        tx = job.transaction
        tx.execute("SAVEPOINT line")
        tx.publish("results", {"job": job.id, "draft": True})
        tx.execute("ROLLBACK TO line")
        tx.execute("RELEASE line")
        tx.publish("results", {"job": job.id})

    stats = Worker(store_path, "q", handler, until_empty=True).run()
    assert stats.acked == 3
    assert offsets(store, "results") == [0, 1, 2, 3]
    assert not any("draft" in str(e.value) for e in store.read("results"))
    assert store.publish("results", "after") == 4 and store.check().ok
