"""store.transaction(): the caller's rows, events, jobs, offsets and acks in one commit."""

from __future__ import annotations

import random

import apsw
import pytest

from benchmarks import crashes
from spark_queue.errors import (
    PayloadTooLargeError,
    QueueConfigError,
    QueueFullError,
    StaleLeaseError,
    TransactionClosedError,
    TransactionOpenError,
    UnknownTopicError,
)
from spark_queue.store import NewJob, Record, Store


@pytest.fixture
def shop(store):
    store.conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER)")
    store.publish_many("inputs", range(10))
    return store


def everything(store: Store) -> tuple:
    with store.snapshot():
        orders = store.conn.execute("SELECT count(*) FROM orders").fetchall()[0][0]
        return (orders, store.topic("orders").bounds() if store.topic("orders").exists() else None,
                store.queue("emails").stats().ready if store.queue("emails").exists() else 0,
                store.committed_offsets("billing"))


def test_a_rollback_drops_business_rows_events_jobs_and_offsets_together(shop):
    before = everything(shop)
    with pytest.raises(KeyError), shop.transaction() as tx:
        tx.execute("INSERT INTO orders (id, total) VALUES (?, ?)", (1, 120))
        tx.publish("orders", {"id": 1})
        tx.publish_many("orders", [{"id": 1, "line": n} for n in range(3)])
        tx.enqueue("emails", {"order": 1})
        tx.commit_offsets("billing", {"inputs": 4})
        assert everything(shop) == (1, (0, 4), 1, {"inputs": 4})  # the block sees its own
        raise KeyError("payment declined")
    assert everything(shop) == before == (0, None, 0, {})
    # The kept topic rows were forgotten with the rollback: offsets start at 0 again.
    assert shop.publish("orders", "first") == 0


def test_a_commit_returns_what_the_store_calls_return_and_shows_all_at_once(shop):
    shop.publish("orders", "earlier")
    shop.queue("emails").enqueue("earlier", idempotency_key="k")
    with shop.transaction() as tx:
        assert tx.execute("INSERT INTO orders VALUES (?, ?) RETURNING id", (7, 1)).fetchall() \
            == [(7,)]
        assert tx.publish("orders", {"id": 7}, key="7", headers={"h": "v"}) == 1
        assert tx.publish_many("orders", [Record("a"), "b"]) == range(2, 4)
        assert tx.enqueue("emails", {"order": 7}, priority=3, delay_ms=0, ttl_ms=60_000,
                          max_attempts=2) == 2
        assert tx.enqueue("emails", "again", idempotency_key="k") == 1  # the original's id
        assert tx.enqueue_many("emails", [NewJob("x"), "y"]) == [3, 4]
        assert tx.commit_offsets("billing", {"inputs": 5}) == {"inputs": 5}
        assert tx.commit_offsets("billing", {"inputs": 2}) == {"inputs": 5}  # never back
        assert tx.committed_offsets("billing") == {"inputs": 5}
        assert [e.value for e in tx.read("inputs", 8)] == [8, 9]
    assert everything(shop) == (1, (0, 4), 4, {"inputs": 5})
    event = shop.read("orders", 1, 2)[0]
    assert (event.key, event.headers, event.value) == ("7", {"h": "v"}, {"id": 7})
    assert shop.check().ok


def test_a_store_call_inside_an_open_transaction_is_named_and_points_to_the_api(shop):
    with shop.transaction() as tx:
        tx.publish("orders", 1)
        for call in (lambda: shop.publish("orders", 2), lambda: shop.publish_many("x", [1]),
                     lambda: shop.queue("emails").enqueue(1),
                     lambda: shop.commit_offsets("c", {"inputs": 1}),
                     lambda: shop.transaction().__enter__()):
            with pytest.raises(TransactionOpenError, match=r"tx\.publish.*tx\.enqueue"):
                call()
        # Reads see the block.
        assert shop.read("orders") and shop.topic("orders").bounds() == (0, 1)
    with pytest.raises(TransactionOpenError, match="store.transaction"), shop.write():
        shop.publish("orders", 3)
    assert shop.topic("orders").bounds() == (0, 1)


def test_a_call_that_fails_leaves_the_transaction_as_before_it(shop):
    shop.queue("full", max_size=1).enqueue("one")
    shop.topic("small").set_limits(max_payload_bytes=8)
    with shop.transaction() as tx:
        tx.execute("INSERT INTO orders VALUES (1, 1)")
        with pytest.raises(QueueFullError):
            tx.enqueue("full", "two")
        with pytest.raises(PayloadTooLargeError):
            tx.publish_many("small", ["ok", "x" * 9])
        with pytest.raises(UnknownTopicError):
            tx.commit_offsets("billing", {"inputs": 3, "nope": 1})
        with pytest.raises(QueueConfigError, match="wait_ms must be 0 inside a transaction"):
            tx.enqueue("emails", 1, wait_ms=100)
        tx.publish("small", "ok")
    assert everything(shop)[0] == 1 and shop.topic("small").bounds() == (0, 1)
    assert shop.committed_offsets("billing") == {} and shop.queue("full").stats().ready == 1


def test_an_ended_transaction_refuses_every_call_and_sql_cannot_end_it_early(shop):
    with shop.transaction() as tx:
        pass
    with pytest.raises(TransactionClosedError, match="has ended"):
        tx.execute("INSERT INTO orders VALUES (1, 1)")
    with pytest.raises(TransactionClosedError, match="has ended"):
        tx.publish("orders", 1)
    ended = pytest.raises(TransactionClosedError, match="ended inside its block by SQL")
    with ended, shop.transaction() as tx:
        tx.execute("INSERT INTO orders VALUES (2, 2)")
        tx.execute("COMMIT")
        tx.execute("INSERT INTO orders VALUES (3, 3)")  # autocommit: the reason it fails
    assert shop.conn.getautocommit()


def test_a_publish_after_sql_wrote_the_same_topic_in_the_block_takes_the_next_offset(shop):
    shop.publish("orders", "kept row")  # Store.publish keeps the topic's row
    with shop.transaction() as tx:
        tx.execute("INSERT INTO sq_publish (topic, value) VALUES ('orders', 'by the view')")
        assert tx.publish("orders", "ours") == 2
    assert shop.publish("orders", "after") == 3
    assert [e.offset for e in shop.read("orders")] == [0, 1, 2, 3] and shop.check().ok


def test_an_ack_in_a_transaction_commits_with_it_and_a_stale_lease_commits_nothing(shop):
    q = shop.queue("work")
    q.enqueue_many(["a", "b"])
    first, second = q.claim(2)
    with shop.transaction() as tx:
        tx.execute("INSERT INTO orders VALUES (1, 1)")
        tx.ack("work", first)
    q.release([second])
    stale = second
    q.claim(1)  # another worker now holds it, under another token
    with pytest.raises(StaleLeaseError, match="rolls back"), shop.transaction() as tx:
        tx.execute("INSERT INTO orders VALUES (2, 2)")
        tx.publish("orders", "from a stale handler")
        tx.ack("work", stale)
    assert everything(shop)[:2] == (1, None)
    assert q.stats().leased == 1 and q.counters().acked == 1


def test_user_sql_errors_come_as_sqlite_raises_them(shop):
    with pytest.raises(apsw.ConstraintError), shop.transaction() as tx:
        tx.execute("INSERT INTO orders VALUES (1, 1)")
        tx.execute("INSERT INTO orders VALUES (1, 1)")
    assert everything(shop)[0] == 0


@pytest.mark.slow
def test_consume_transform_produce_sigkilled_at_random_is_exactly_once(tmp_path):
    # docs/transactions.md's recipe; the acceptance run (10,000 inputs, 50 kills) is
    # `python -m benchmarks crashes`.
    result = crashes.run_consume(str(tmp_path / "c.sqlite"), 400, 5, 10, random.Random(3), 20.0)
    assert result["duplicates"] == 0 and result["kills"] >= 1


def test_entering_an_open_transaction_again_joins_it(shop):
    with shop.transaction() as tx:
        with tx as inner:
            assert inner is tx
            inner.execute("INSERT INTO orders VALUES (1, 1)")
        tx.publish("orders", 1)  # still open: the outer block commits
    assert everything(shop)[:2] == (1, (0, 1))
    with pytest.raises(KeyError), shop.transaction() as tx, tx:
        tx.execute("INSERT INTO orders VALUES (2, 2)")
        raise KeyError("rolls back the whole transaction")
    assert everything(shop)[:2] == (1, (0, 1))
