"""Every public method of Store (with its Topic and Housekeeping handles), Queue and
Producer, given integers no store can hold or a closed store: a named SparkQueueError
(saying the allowed range), and the store unchanged.

The tables below must name every public method (a test checks it), so a new method
cannot skip the walk.
"""

from __future__ import annotations

import hashlib
import inspect

import pytest

from spark_queue.errors import SparkQueueError, StoreClosedError, StoreError
from spark_queue.store import Housekeeping, NewJob, Producer, Queue, Record, Store, Topic, TopicRows
from spark_queue.store.store_moved import MOVED_NAMES

HUGE = (2**63, 2**64, -(2**63) - 1)

# name -> calls(store, queue, bad integer); a call passes the bad integer where an
# integer goes. Methods taking no integer are walked with the closed store only.
STORE_CALLS = {
    "publish": lambda s, q, n: s.publish("t", 1, timestamp_ms=n),
    "publish_many": lambda s, q, n: s.publish_many("t", [Record(1, timestamp_ms=n)]),
    "read": lambda s, q, n: s.read("t", n),
    "read.end": lambda s, q, n: s.read("t", 0, n),
    "read.limit": lambda s, q, n: s.read("t", 0, None, n),
    "read_arrow": lambda s, q, n: s.read_arrow("t", n),
    "read_arrow.end": lambda s, q, n: s.read_arrow("t", 0, n),
    "read_arrow.limit": lambda s, q, n: s.read_arrow("t", 0, None, n),
    "read_arrow_payloads": lambda s, q, n: s.read_arrow_payloads("t", n, n),
    "read_arrow_payloads.end": lambda s, q, n: s.read_arrow_payloads("t", 0, n),
    "topic.offset_for_timestamp": lambda s, q, n: s.topic("t").offset_for_timestamp(n),
    "topic.set_limits": lambda s, q, n: s.topic("t").set_limits(max_payload_bytes=n),
    "topic.configure": lambda s, q, n: s.topic("t").configure(retention_ms=n),
    "topic.configure.rows": lambda s, q, n: s.topic("t").configure(retention_rows=n),
    "topic.configure.bytes": lambda s, q, n: s.topic("t").configure(max_payload_bytes=n),
    "commit_offsets": lambda s, q, n: s.commit_offsets("c", {"t": n}),
    "reset_offsets": lambda s, q, n: s.reset_offsets("c", ["t"], lambda topic: n),
    "save_start": lambda s, q, n: s.save_start("c", "query", lambda: {"t": n}),
    "topic.set_retention": lambda s, q, n: s.topic("t").set_retention(retention_ms=n),
    "topic.set_retention.rows": lambda s, q, n: s.topic("t").set_retention(retention_rows=n),
    "topic.prune": lambda s, q, n: s.topic("t").prune(retention_ms=n),
    "topic.prune.rows": lambda s, q, n: s.topic("t").prune(retention_rows=n),
    "topic.prune.at": lambda s, q, n: s.topic("t").prune(retention_ms=1, at_ms=n),
    "housekeeping.prune": lambda s, q, n: s.housekeeping.prune(retention_rows=n),
    "commit_sink_batch": lambda s, q, n: s.commit_sink_batch("s", n, TopicRows("t", ())),
    "queue": lambda s, q, n: s.queue("q", max_attempts=n),
    "wait_for_commit": lambda s, q, n: s.wait_for_commit(n),
    "topic.start_at": lambda s, q, n: s.topic("t3").start_at(n),
    "topic.fix_mirror_shift": lambda s, q, n: s.topic("t").fix_mirror_shift(n),
    "topic.quarantine": lambda s, q, n: s.topic("t").quarantine([n]),
    "topic.replay_quarantine": lambda s, q, n: s.topic("t").replay_quarantine([n]),
    "topic.purge_quarantine": lambda s, q, n: s.topic("t").purge_quarantine([n]),
    "housekeeping.set_interval": lambda s, q, n: s.housekeeping.set_interval(n),
}
STORE_NO_INTEGER = {
    "topic.create": lambda s: s.topic("t2").create(),
    "topic.bounds": lambda s: s.topic("t").bounds(),
    "topic.earliest_offset": lambda s: s.topic("t").earliest_offset(),
    "topic.latest_offset": lambda s: s.topic("t").latest_offset(),
    "topics": lambda s: s.topics(),
    "topic.delete": lambda s: s.topic("t").delete(),
    "topic.exists": lambda s: s.topic("t").exists(),
    "topic.mirror_shift": lambda s: s.topic("t").mirror_shift(),
    "topic.set_schema": lambda s: s.topic("t").set_schema("a INT", compatibility="none"),
    "topic.schema": lambda s: s.topic("t").schema(),
    "topic.schema_history": lambda s: s.topic("t").schema_history(),
    "committed_offsets": lambda s: s.committed_offsets("c"),
    "consumers": lambda s: s.consumers(),
    "consumer_positions": lambda s: s.consumer_positions(),
    "set_create_topics_on_publish": lambda s: s.set_create_topics_on_publish(True),
    "sink_for_checkpoint": lambda s: s.sink_for_checkpoint("/ckpt", "q1", id_lost=False),
    "delete_consumer": lambda s: s.delete_consumer("c"),
    "backup": lambda s: s.backup(s.path + ".copy"),
    "page_size": lambda s: s.page_size(),
    "check": lambda s: s.check(),
    "data_version": lambda s: s.data_version(),
    "queues": lambda s: s.queues(),
    "queue_stats": lambda s: s.queue_stats(),
    "delete_queue": lambda s: s.delete_queue("q"),
    "housekeeping.sweep_expired": lambda s: s.housekeeping.sweep_expired(),
    "housekeeping.status": lambda s: s.housekeeping.status(),
    "housekeeping.run": lambda s: s.housekeeping.run(),
    "housekeeping.held_back": lambda s: s.housekeeping.held_back(),
    "write": lambda s: s.write().__enter__(),
    "snapshot": lambda s: s.snapshot().__enter__(),
    "transaction": lambda s: s.transaction().__enter__(),
}
QUEUE_CALLS = {
    "configure": lambda s, q, n: q.configure(visibility_timeout_ms=n),
    "enqueue": lambda s, q, n: q.enqueue(1, priority=n),
    "enqueue.delay": lambda s, q, n: q.enqueue(1, delay_ms=n),
    "enqueue.ttl": lambda s, q, n: q.enqueue(1, ttl_ms=n),
    "enqueue.attempts": lambda s, q, n: q.enqueue(1, max_attempts=n),
    "enqueue.wait": lambda s, q, n: q.enqueue(1, wait_ms=n),
    "enqueue_many": lambda s, q, n: q.enqueue_many([NewJob(1, priority=n)]),
    "claim": lambda s, q, n: q.claim(n),
    "claim.lease": lambda s, q, n: q.claim(1, lease_ms=n),
    "ack": lambda s, q, n: q.ack((n, 1)),
    "ack.token": lambda s, q, n: q.ack((1, n)),
    "ack_many": lambda s, q, n: q.ack_many([(n, n)]),
    "ack_and_claim": lambda s, q, n: q.ack_and_claim([(n, 1)], 1),
    "ack_and_claim.limit": lambda s, q, n: q.ack_and_claim([], n),
    "nack": lambda s, q, n: q.nack((n, 1), "boom"),
    "nack.delay": lambda s, q, n: q.nack((1, 1), "boom", delay_ms=n),
    "nack_many": lambda s, q, n: q.nack_many([(n, 1)], "boom"),
    "release": lambda s, q, n: q.release([(n, 1)]),
    "extend": lambda s, q, n: q.extend([(n, 1)]),
    "extend.lease": lambda s, q, n: q.extend([(1, 1)], lease_ms=n),
    "peek": lambda s, q, n: q.peek(n),
    "get": lambda s, q, n: q.get(n),
    "remove": lambda s, q, n: q.remove(n),
    "dead_letters": lambda s, q, n: q.dead_letters(n),
    "requeue_dead": lambda s, q, n: q.requeue_dead([n]),
    "purge_dead": lambda s, q, n: q.purge_dead([n]),
    "register_worker": lambda s, q, n: q.register_worker(host="h", pid=n, concurrency=1,
                                                         ttl_ms=1000),
    "register_worker.slots": lambda s, q, n: q.register_worker(host="h", pid=1, concurrency=n,
                                                               ttl_ms=1000),
    "register_worker.ttl": lambda s, q, n: q.register_worker(host="h", pid=1, concurrency=1,
                                                             ttl_ms=n),
    "worker_heartbeat": lambda s, q, n: q.worker_heartbeat(n, jobs_held=0, ttl_ms=1000),
    "worker_heartbeat.held": lambda s, q, n: q.worker_heartbeat(1, jobs_held=n, ttl_ms=1000),
    "worker_heartbeat.ttl": lambda s, q, n: q.worker_heartbeat(1, jobs_held=0, ttl_ms=n),
    "unregister_worker": lambda s, q, n: q.unregister_worker(n),
}
QUEUE_NO_INTEGER = {
    "pause": lambda q: q.pause(),
    "resume": lambda q: q.resume(),
    "admission": lambda q: q.admission(),
    "config": lambda q: q.config(),
    "exists": lambda q: q.exists(),
    "stats": lambda q: q.stats(),
    "purge": lambda q: q.purge(),
    "sweep_expired": lambda q: q.sweep_expired(),
    "counters": lambda q: q.counters(),
    "workers": lambda q: q.workers(),
}
PRODUCER_CALLS = {
    "__init__": lambda path, p, n: Producer(path, linger_ms=n),
    "__init__.batch": lambda path, p, n: Producer(path, max_batch=n),
    "__init__.busy": lambda path, p, n: Producer(path, busy_timeout_ms=n),
    "publish": lambda path, p, n: p.publish("t", n),  # a JSON number the store cannot hold
    "enqueue": lambda path, p, n: p.enqueue("q", 1, priority=n),
    "enqueue.delay": lambda path, p, n: p.enqueue("q", 1, delay_ms=n),
    "enqueue_nowait": lambda path, p, n: p.enqueue_nowait("q", 1, ttl_ms=n).result(),
    "flush": lambda path, p, n: p.flush(n),
}
PRODUCER_NO_INTEGER = {
    "publish_nowait": lambda p: p.publish_nowait("t", 1).result(),
    "close": lambda p: p.close(),
}


def public_methods(cls: type) -> set[str]:
    return {
        name for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and callable(member)
    }


def test_the_walk_names_every_public_method():
    store_walk = [*STORE_CALLS, *STORE_NO_INTEGER]
    walked = {
        Store: {n.split(".")[0] for n in store_walk} | MOVED_NAMES,  # delegates: test_facade
        Topic: {n.split(".")[1] for n in store_walk if n.startswith("topic.")},
        Housekeeping: {n.split(".")[1] for n in store_walk if n.startswith("housekeeping.")},
        Queue: {n.split(".")[0] for n in [*QUEUE_CALLS, *QUEUE_NO_INTEGER]},
        Producer: {n.split(".")[0] for n in [*PRODUCER_CALLS, *PRODUCER_NO_INTEGER]},
    }
    for cls, names in walked.items():
        assert public_methods(cls) - {"close"} <= names | {"close"}, cls.__name__


def fingerprint(path: str) -> str:
    """Every row of every table, read by a connection of its own."""
    with Store(path, readonly=True) as store:
        digest = hashlib.sha256()
        names = [r[0] for r in store.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for name in names:
            for row in sorted(repr(r) for r in store.conn.execute(f'SELECT * FROM "{name}"')):
                digest.update(row.encode())
        return digest.hexdigest()


@pytest.fixture
def path(tmp_path):
    path = str(tmp_path / "store.sqlite")
    with Store(path) as store:
        store.publish_many("t", range(5))
        store.commit_offsets("c", {"t": 2})
        queue = store.queue("q")
        queue.enqueue_many(range(3))
        queue.claim(1)
    return path


def assert_named(call, *args):
    try:
        call(*args)
    except SparkQueueError:
        return
    except Exception as exc:  # noqa: BLE001 - the point: name what leaked
        pytest.fail(f"leaked {type(exc).__module__}.{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("bad", HUGE)
@pytest.mark.parametrize("call", sorted(STORE_CALLS) + [f"Queue.{n}" for n in sorted(QUEUE_CALLS)])
def test_integers_no_store_can_hold_are_named_errors_and_change_nothing(path, call, bad):
    before = fingerprint(path)
    fn = STORE_CALLS.get(call) or QUEUE_CALLS[call.removeprefix("Queue.")]
    with Store(path) as store, pytest.raises(SparkQueueError) as raised:
        fn(store, store.queue("q"), bad)
    # Named after the argument by its check: the allowed range and the value given.
    assert "must be" in str(raised.value) and str(bad) in str(raised.value), raised.value
    assert fingerprint(path) == before


@pytest.mark.parametrize("bad", HUGE)
@pytest.mark.parametrize("call", sorted(PRODUCER_CALLS))
def test_producer_calls_with_integers_no_store_can_hold_are_named_errors(path, call, bad):
    before = fingerprint(path)
    with Producer(path) as producer:
        if call == "publish":  # a value, not an argument: stored as JSON text, exact
            offset = producer.publish("t", bad)
            with Store(path) as store:
                assert store.read("t", offset, offset + 1)[0].value == bad
            return
        with pytest.raises(SparkQueueError):
            made = PRODUCER_CALLS[call](path, producer, bad)
            if isinstance(made, Producer):
                made.close()
    assert fingerprint(path) == before


@pytest.mark.parametrize(
    "call",
    sorted(STORE_CALLS) + sorted(STORE_NO_INTEGER) + [f"Queue.{n}" for n in
                                                      sorted({*QUEUE_CALLS, *QUEUE_NO_INTEGER})],
)
def test_every_method_of_a_closed_store_raises_store_closed_error(path, call):
    store = Store(path)
    queue = store.queue("q")
    store.close()
    if call in STORE_CALLS:
        run = lambda: STORE_CALLS[call](store, queue, 1)  # noqa: E731
    elif call in STORE_NO_INTEGER:
        run = lambda: STORE_NO_INTEGER[call](store)  # noqa: E731
    elif call.removeprefix("Queue.") in QUEUE_CALLS:
        run = lambda: QUEUE_CALLS[call.removeprefix("Queue.")](store, queue, 1)  # noqa: E731
    else:
        run = lambda: QUEUE_NO_INTEGER[call.removeprefix("Queue.")](queue)  # noqa: E731
    with pytest.raises(StoreClosedError, match="closed"):
        run()
    store.close()  # idempotent


@pytest.mark.parametrize(
    "call", sorted({*PRODUCER_CALLS, *PRODUCER_NO_INTEGER} - {"close", "flush"})
)
def test_every_method_of_a_closed_producer_raises_a_named_error(path, call):
    """(``flush`` and ``close`` of a closed producer succeed: everything sent was written.)"""
    producer = Producer(path)
    producer.close()
    if call.startswith("__init__"):
        return
    fn = PRODUCER_CALLS.get(call)
    with pytest.raises(SparkQueueError):
        if fn is not None:
            fn(path, producer, 1)
        else:
            PRODUCER_NO_INTEGER[call](producer)


def test_a_store_path_that_cannot_be_created_is_a_named_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for bad in (blocker / "store.sqlite", "/proc/no-such-process/store.sqlite"):
        with pytest.raises(StoreError, match="cannot be created"):
            Store(bad).close()
        with pytest.raises(StoreError, match="cannot be created"):
            Producer(bad).close()
