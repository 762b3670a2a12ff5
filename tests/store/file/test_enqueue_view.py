"""sq_enqueue: any SQLite client enqueues through the view; its trigger applies the queue's
settings and refuses a bad row naming the field, writing nothing of it."""

from __future__ import annotations

import json

import apsw
import pytest

from spark_queue.store import Store

INSERT = ("INSERT INTO sq_enqueue (queue, payload, payload_type, priority, delay_ms, ttl_ms, "
          "idempotency_key, max_attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")


def enqueue(conn, queue, payload, payload_type=None, priority=None, delay_ms=None,
            ttl_ms=None, key=None, max_attempts=None):
    conn.execute(INSERT, (queue, payload, payload_type, priority, delay_ms, ttl_ms, key,
                          max_attempts))


@pytest.mark.parametrize(("row", "field"), [
    (dict(queue="nope", payload="{}"), "queue is not a queue of this store"),
    (dict(queue=None, payload="{}"), "queue is not a queue of this store"),
    (dict(queue="q", payload='"' + "x" * 40 + '"'), "payload is larger than the queue's "
                                                    "max_payload_bytes"),
    (dict(queue="q", payload="{not json"), "payload is not valid JSON"),
    (dict(queue="q", payload=7), "payload is not valid JSON"),
    (dict(queue="q", payload=b"x", payload_type=1), "payload does not fit payload_type"),
    (dict(queue="q", payload="{}", payload_type=5), "payload_type must be"),
    (dict(queue="q", payload="{}", delay_ms=-1), "delay_ms must be a non-negative INTEGER"),
    (dict(queue="q", payload="{}", delay_ms="soon"), "delay_ms must be"),
    (dict(queue="q", payload="{}", ttl_ms=0), "ttl_ms must be a positive INTEGER"),
    (dict(queue="q", payload="{}", priority=1.5), "priority must be an INTEGER"),
    (dict(queue="q", payload="{}", max_attempts=0), "max_attempts must be a positive"),
    (dict(queue="q", payload="{}", key=""), "idempotency_key must be non-empty TEXT"),
    (dict(queue="q", payload="{}", key=3), "idempotency_key must be non-empty TEXT"),
])
def test_bad_input_is_refused_naming_the_field_and_nothing_is_written(store, row, field):
    store.queue("q", max_payload_bytes=32)
    conn = store.conn
    conn.execute("CREATE TABLE orders (id INTEGER)")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO orders VALUES (1)")
    with pytest.raises(apsw.ConstraintError, match=f"^sq_enqueue: {field}"):
        enqueue(conn, **row)
    # The statement is undone; the caller's transaction goes on, its own row intact.
    assert conn.execute("SELECT count(*) FROM orders").fetchall() == [(1,)]
    conn.execute("ROLLBACK")
    assert store.queue("q").stats().ready == 0
    assert conn.execute("SELECT count(*) FROM sq_jobs").fetchall() == [(0,)]


def test_a_full_queue_is_refused_naming_max_size(store):
    store.queue("q", max_size=1)
    enqueue(store.conn, "q", "{}")
    with pytest.raises(apsw.ConstraintError, match="^sq_enqueue: queue is full .*max_size"):
        enqueue(store.conn, "q", "{}")
    assert store.queue("q").stats().ready == 1


def test_the_options_apply_as_queue_enqueue_applies_them(store):
    q = store.queue("q")
    q.configure()  # created with the defaults: the view enqueues into existing queues only
    enqueue(store.conn, "q", '{"a": 1}', priority=5, ttl_ms=60_000, max_attempts=2)
    enqueue(store.conn, "q", "plain text", payload_type=1)
    enqueue(store.conn, "q", b"\x00bytes")
    enqueue(store.conn, "q", None)
    enqueue(store.conn, "q", "{}", delay_ms=3_600_000)
    jobs = q.claim(10)
    assert [j.payload for j in jobs] == [{"a": 1}, "plain text", b"\x00bytes", None]
    first = jobs[0]
    assert (first.priority, first.max_attempts) == (5, 2)
    assert first.expires_ms - first.enqueued_ms == 60_000
    assert q.stats().delayed == 1
    assert store.conn.execute("SELECT queue, payload, priority, delay_ms, ttl_ms, max_attempts "
                              "FROM sq_enqueue WHERE id = 5").fetchall() == [
        ("q", "{}", 0, 3_600_000, None, None)]
    assert store.check().ok


def test_a_duplicate_idempotency_key_inserts_nothing_and_does_not_fail_the_transaction(store):
    q = store.queue("q")
    original = q.enqueue({"n": 0}, idempotency_key="order-7")
    conn = store.conn
    conn.execute("BEGIN IMMEDIATE")
    enqueue(conn, "q", json.dumps({"n": 1}), key="order-7")  # remembered: skipped, no error
    enqueue(conn, "q", json.dumps({"n": 2}), key="order-8")
    enqueue(conn, "q", json.dumps({"n": 3}), key="order-8")  # same statement's batch
    conn.execute("COMMIT")
    jobs = q.claim(10)
    assert [j.payload for j in jobs] == [{"n": 0}, {"n": 2}]
    assert jobs[0].id == original
    # Python sees the key the view stored: a duplicate from either side returns one id.
    assert q.enqueue("again", idempotency_key="order-8") == jobs[1].id
    assert store.check().ok


def test_a_key_past_its_window_whose_job_is_gone_enqueues_anew(store_path):
    with Store(store_path) as store:
        q = store.queue("q", idempotency_window_ms=1)
        q.enqueue("old", idempotency_key="k")
        q.ack(q.claim(1)[0])
        store.conn.execute("UPDATE sq_job_keys SET created_ms = created_ms - 1000")
        enqueue(store.conn, "q", '"new"', key="k")
        [job] = q.claim(1)
        assert job.payload == "new"
        assert store.conn.execute("SELECT job_id FROM sq_job_keys").fetchall() == [(job.id,)]
