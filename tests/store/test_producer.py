"""The producer: many threads, one writer, batches that commit whole or not at all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from spark_queue.errors import (
    CorruptStoreError,
    InvalidNameError,
    PayloadError,
    PayloadTooLargeError,
    QueueConfigError,
    QueueFullError,
    StoreBusyError,
    StoreError,
    StoreFullError,
)
from spark_queue.store import Producer, Store

# A linger no test waits out: calls stay queued until max_batch, flush or close.
HOLD_MS = 600_000


def _in_threads(count, body):
    errors = []

    def target(i):
        try:
            body(i)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            errors.append(exc)

    workers = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]


def test_every_caller_gets_the_offset_a_reader_sees_and_thread_order_holds(store_path):
    returned = {}
    with Producer(store_path) as producer:

        def publish(t):
            returned[t] = [producer.publish("t", {"t": t, "seq": i}) for i in range(300)]

        _in_threads(8, publish)
    with Store(store_path) as reader:
        events = reader.read("t")
        assert reader.check().ok
    assert [e.offset for e in events] == list(range(2400))
    for t, offsets in returned.items():
        assert [events[o].value for o in offsets] == [{"t": t, "seq": i} for i in range(300)]
        assert offsets == sorted(offsets)


def test_enqueue_returns_the_ids_a_claim_sees_and_keeps_idempotency(store_path):
    with Producer(store_path) as producer:
        ids = {}

        def enqueue(t):
            ids[t] = [producer.enqueue("jobs", f"{t}-{i}", priority=1) for i in range(50)]

        _in_threads(4, enqueue)
        first = producer.enqueue("jobs", "keyed", idempotency_key="k1")
        assert producer.enqueue("jobs", "again", idempotency_key="k1") == first
    with Store(store_path) as store:
        claimed = {job.id: job.payload for job in store.queue("jobs").claim(1000)}
    for t, job_ids in ids.items():
        assert [claimed[i] for i in job_ids] == [f"{t}-{i}" for i in range(50)]
    assert claimed[first] == "keyed" and len(claimed) == 201


def test_calls_waiting_together_commit_in_one_transaction_only_when_released(store_path):
    with Producer(store_path, linger_ms=HOLD_MS) as producer, Store(store_path) as reader:
        futures = [producer.publish_nowait("t", i) for i in range(5)]
        futures.append(producer.enqueue_nowait("jobs", "j"))
        # Nothing is visible or answered while the calls linger.
        assert not reader.topic("t").exists() and not any(f.done() for f in futures)
        producer.flush()
        assert all(f.done() for f in futures)
        assert [f.result() for f in futures[:5]] == [0, 1, 2, 3, 4]
        assert producer.batches_committed == 1
        assert [e.value for e in reader.read("t")] == [0, 1, 2, 3, 4]


def test_max_batch_ends_the_linger(store_path):
    with Producer(store_path, linger_ms=HOLD_MS, max_batch=3) as producer:
        futures = [producer.publish_nowait("t", i) for i in range(3)]
        assert [f.result(timeout=60) for f in futures] == [0, 1, 2]
        assert producer.batches_committed == 1


def test_bad_input_fails_in_the_calling_thread_and_neighbours_commit(store_path):
    with Producer(store_path, linger_ms=HOLD_MS) as producer:
        before = producer.publish_nowait("t", "before")
        with pytest.raises(PayloadError, match="set"):
            producer.publish_nowait("t", {1, 2})
        with pytest.raises(PayloadError, match="surrogate"):
            producer.publish_nowait("t", "lone \ud800 surrogate")
        with pytest.raises(PayloadError, match="key must be str"):
            producer.publish_nowait("t", "v", key=7)
        with pytest.raises(PayloadError, match="headers must map str to str"):
            producer.publish_nowait("t", "v", headers={"a": 1})
        with pytest.raises(InvalidNameError):
            producer.publish_nowait("bad name", "v")
        with pytest.raises(QueueConfigError, match="delay_ms"):
            producer.enqueue_nowait("jobs", "v", delay_ms=-1)
        with pytest.raises(PayloadError):
            producer.enqueue("jobs", float("nan"))
        after = producer.publish_nowait("t", "after")
        producer.flush()
        assert (before.result(), after.result()) == (0, 1)
        assert producer.batches_committed == 1


def test_a_value_changed_after_the_call_is_stored_as_it_was(store_path):
    with Producer(store_path, linger_ms=HOLD_MS) as producer:
        value = {"n": 1}
        payload = ["a"]
        producer.publish_nowait("t", value)
        producer.enqueue_nowait("jobs", payload)
        value["n"] = 2
        payload.append("b")
    with Store(store_path) as store:
        assert store.read("t")[0].value == {"n": 1}
        assert store.queue("jobs").claim(1)[0].payload == ["a"]


def test_a_failed_batch_fails_every_call_with_the_error_and_writes_nothing(store_path):
    with Producer(store_path, linger_ms=HOLD_MS) as producer:
        producer.publish_nowait("t", "seed")
        producer.flush()
        # The writer's connection, while its thread waits for work: the page
        # limit makes the next batch run out of space halfway through.
        conn = producer._store.conn
        pages = conn.execute("PRAGMA page_count").fetchall()[0][0]
        conn.execute(f"PRAGMA max_page_count={pages + 5}")
        futures = [producer.publish_nowait("t", "small")]
        futures += [producer.publish_nowait("t", "x" * 100_000) for _ in range(3)]
        futures.append(producer.enqueue_nowait("jobs", "j"))
        producer.flush()
        for future in futures:
            with pytest.raises(StoreFullError, match="nothing of this transaction"):
                future.result()
        with Store(store_path) as reader:
            assert reader.topic("t").bounds() == (0, 1)
            assert reader.queues() == []
        conn.execute("PRAGMA max_page_count=4294967294")
        # Offsets stay dense: the next batch continues after the seed.
        after = producer.publish_nowait("t", "after")
        producer.flush()
        assert after.result() == 1


def test_busy_timeout_fails_the_batch_with_store_busy_error(store_path):
    with Store(store_path) as holder, Producer(
        store_path, busy_timeout_ms=50, linger_ms=HOLD_MS, max_batch=3
    ) as producer:
        holder.publish("t", "first")
        with holder.write():
            futures = [producer.publish_nowait("t", i) for i in range(3)]
            for future in futures:
                with pytest.raises(StoreBusyError, match="locked by another writer"):
                    future.result(timeout=60)
        after = producer.publish_nowait("t", "after")
        producer.flush()
        assert after.result() == 1
        assert holder.check().ok


def test_a_full_queue_fails_only_the_calls_that_do_not_fit(store_path):
    with Store(store_path) as store:
        store.queue("small", max_size=2)
    with Producer(store_path, linger_ms=HOLD_MS) as producer:
        event = producer.publish_nowait("t", "kept")
        jobs = [producer.enqueue_nowait("small", i) for i in range(4)]
        producer.flush()
        assert event.result() == 0
        assert [jobs[0].result(), jobs[1].result()] == [1, 2]
        for future in jobs[2:]:
            with pytest.raises(QueueFullError, match="max_size 2"):
                future.result()


def test_a_payload_over_its_limit_fails_alone_and_the_rest_of_its_topic_commits(store_path):
    with Store(store_path) as store:
        store.topic("t").set_limits(max_payload_bytes=10)
        store.queue("jobs", max_payload_bytes=10)
    with Producer(store_path, linger_ms=HOLD_MS) as producer:
        sent = [producer.publish_nowait("t", v) for v in ("a", "x" * 11, "b")]
        jobs = [producer.enqueue_nowait("jobs", v) for v in ("y" * 11, "c")]
        producer.flush()
        assert (sent[0].result(), sent[2].result()) == (0, 1)
        for refused in (sent[1], jobs[0]):
            with pytest.raises(PayloadTooLargeError, match="over the max_payload_bytes of 10"):
                refused.result()
        assert jobs[1].result() >= 1
        assert producer.batches_committed == 1
    with Store(store_path) as store:
        assert [e.value for e in store.read("t")] == ["a", "b"]
        assert [job.payload for job in store.queue("jobs").claim(10)] == ["c"]
        assert store.check().ok


def test_stray_rows_above_next_offset_fail_the_batch_and_nothing_is_written(store_path):
    with Store(store_path) as store:
        store.publish("t", "first")
        with store.write() as conn:
            # A foreign client's row at offset 3 that did not advance next_offset (1).
            conn.execute(
                "INSERT INTO sq_events (topic_id, offset, ts_ms, value, value_type) "
                "VALUES (1, 3, 0, 'stray', 1)"
            )
    with Producer(store_path, linger_ms=HOLD_MS) as producer:
        futures = [producer.publish_nowait("t", i) for i in range(3)]
        producer.flush()
        for future in futures:
            with pytest.raises(CorruptStoreError, match="at or above its next_offset 1"):
                future.result()
    with Store(store_path) as store, store.file.read() as conn:
        rows = conn.execute("SELECT offset FROM sq_events ORDER BY offset").fetchall()
        assert rows == [(0,), (3,)]
        assert conn.execute("SELECT next_offset FROM sq_topics").fetchall() == [(1,)]


def test_a_linger_ends_once_the_threads_of_the_last_batch_call_again(store_path):
    # With a linger no test waits out, the first batch of 4 blocking calls
    # goes at flush(); the 4 threads' next calls then end the linger themselves.
    with Producer(store_path, linger_ms=HOLD_MS) as producer:
        first_sent = threading.Barrier(5)
        returned = {}

        def publish(t):
            returned[t] = [producer.publish("t", f"{t}-0")]
            first_sent.wait()
            returned[t].append(producer.publish("t", f"{t}-1"))

        workers = [threading.Thread(target=publish, args=(t,)) for t in range(4)]
        for worker in workers:
            worker.start()
        while producer._sent < 4:
            time.sleep(0.001)
        producer.flush()
        first_sent.wait()
        for worker in workers:
            worker.join(timeout=60)
        assert not any(worker.is_alive() for worker in workers)
        assert producer.batches_committed == 2
    assert sorted(o for offsets in returned.values() for o in offsets) == list(range(8))


def test_close_writes_everything_sent_and_refuses_new_calls(store_path):
    producer = Producer(store_path, linger_ms=HOLD_MS)
    futures = [producer.publish_nowait("t", i) for i in range(10)]
    producer.close()
    assert [f.result() for f in futures] == list(range(10))
    with pytest.raises(StoreError, match="producer .* is closed"):
        producer.publish("t", "late")
    producer.close()


def test_flush_times_out_naming_what_is_unwritten(store_path):
    with Store(store_path) as holder, Producer(store_path, busy_timeout_ms=60_000) as producer:
        with holder.write():
            future = producer.publish_nowait("t", "waits")
            with pytest.raises(TimeoutError, match="1 calls still unwritten"):
                producer.flush(timeout_ms=50)
        assert future.result(timeout=60) == 0


def test_a_blocking_call_from_a_done_callback_is_refused_not_deadlocked(store_path):
    seen = []
    with Producer(store_path) as producer:

        def callback(future):
            try:
                producer.publish("t", "nested")
            except StoreError as exc:
                seen.append(exc)
            seen.append(producer.publish_nowait("t", "chained"))

        producer.publish_nowait("t", "first").add_done_callback(callback)
        producer.flush()
        producer.flush()
        assert "Producer.publish was called from a future's done-callback" in str(seen[0])
        assert seen[1].result(timeout=60) == 1


class Interrupted(Exception):
    """What the test's signal handler raises in the main thread, as Ctrl-C would."""


@pytest.fixture
def interrupt_main_when():
    """``interrupt_main_when(ready)``: once ``ready()`` holds, interrupt the main thread's wait."""
    def handler(signum, frame):
        raise Interrupted

    previous = signal.signal(signal.SIGUSR1, handler)
    helpers = []

    def arm(ready):
        def fire():
            while not ready():
                time.sleep(0.001)
            os.kill(os.getpid(), signal.SIGUSR1)

        helper = threading.Thread(target=fire, daemon=True)
        helper.start()
        helpers.append(helper)

    yield arm
    for helper in helpers:
        helper.join(timeout=60)
    signal.signal(signal.SIGUSR1, previous)


def _started(target, *args):
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def test_a_leader_interrupted_in_its_linger_hands_the_lead_on(store_path, interrupt_main_when):
    # The main thread leads and lingers; a second caller waits behind it. The
    # interrupt must pass the lead to that caller (not back to the main
    # thread, whose call is first in line), or the batch would never be written.
    returned = []
    with Producer(store_path, linger_ms=HOLD_MS) as producer:
        def behind():
            while producer._sent < 1:  # queue after the main thread's call, which leads
                time.sleep(0.001)
            returned.append(producer.publish("t", "behind"))

        waiting = _started(behind)
        interrupt_main_when(lambda: producer._sent == 2)
        with pytest.raises(Interrupted):
            producer.publish("t", "main")
        producer.flush()  # ends the new leader's linger
        waiting.join(timeout=60)
        assert not waiting.is_alive()
        after = producer.publish_nowait("t", "after")
        producer.flush()
        assert after.result(timeout=60) == 2
    # The interrupted call had joined the batch: it is written, only unanswered.
    with Store(store_path) as reader:
        assert [e.value for e in reader.read("t")] == ["main", "behind", "after"]
    assert returned == [1]


def test_an_interrupted_follower_is_never_handed_the_lead(store_path, interrupt_main_when):
    # A leader's write waits on another connection's lock; the main thread
    # waits behind it and is interrupted; a third caller queues after it. When
    # the first batch commits the lead must skip the abandoned call.
    returned = {}
    with Store(store_path) as holder, Producer(store_path, busy_timeout_ms=60_000) as producer:
        with holder.write():
            first = _started(lambda: returned.setdefault("first", producer.publish("t", "first")))
            while not producer._writing_in:
                time.sleep(0.001)
            interrupt_main_when(lambda: producer._sent == 2)
            with pytest.raises(Interrupted):
                producer.publish("t", "main")
            third = _started(lambda: returned.setdefault("third", producer.publish("t", "third")))
            while producer._sent < 3:
                time.sleep(0.001)
        for thread in (first, third):
            thread.join(timeout=60)
            assert not thread.is_alive()
    assert returned == {"first": 0, "third": 2}
    with Store(store_path) as reader:
        assert [e.value for e in reader.read("t")] == ["first", "main", "third"]


@pytest.mark.parametrize(
    ("setting", "value"),
    [("linger_ms", -1), ("max_batch", 0), ("max_batch", True), ("max_pending", 10)],
)
def test_bad_producer_settings_fail_naming_the_setting(store_path, setting, value):
    with pytest.raises(StoreError, match=f"Producer {setting} must be an integer"):
        Producer(store_path, **{setting: value})


KILLED_PRODUCER = textwrap.dedent(
    """
    import os, sys, threading
    from spark_queue.store import Producer
    producer = Producer(sys.argv[1])
    def publish(t):
        seq = 0
        while True:
            offset = producer.publish("t", {"t": t, "seq": seq})
            # One write per line: a line in the pipe is a call that returned.
            os.write(1, f"{t} {seq} {offset}\\n".encode())
            seq += 1
    for t in range(8):
        threading.Thread(target=publish, args=(t,), daemon=True).start()
    threading.Event().wait()
    """
)


@pytest.mark.slow
def test_sigkill_while_8_threads_publish_keeps_every_returned_offset(store_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_PRODUCER, store_path], stdout=subprocess.PIPE, text=True
    )
    acked = []
    for line in proc.stdout:
        acked.append(tuple(map(int, line.split())))
        if len(acked) == 3000:
            break
    os.kill(proc.pid, signal.SIGKILL)
    # Lines written before the kill are still in the pipe: they were answered too.
    acked += [tuple(map(int, line.split())) for line in proc.stdout]
    proc.wait(timeout=30)
    with Store(store_path, create=False) as store:
        assert store.check().ok
        events = store.read("t")
    assert [e.offset for e in events] == list(range(len(events)))
    for t, seq, offset in acked:
        assert events[offset].value == {"t": t, "seq": seq}
    for t in range(8):
        # Per thread: a prefix of its calls, in call order, with no gap.
        seqs = [e.value["seq"] for e in events if e.value["t"] == t]
        assert seqs == list(range(len(seqs)))


def test_a_topic_name_checked_once_lets_no_bad_name_through(store_path):
    # publish_nowait skips the name check for a topic it checked already.
    with Producer(store_path) as producer:
        assert producer.publish_nowait("t", "a").result() == 0
        for bad in (["t"], "t t", "", 5):
            with pytest.raises(InvalidNameError):
                producer.publish_nowait(bad, "x")
        assert producer.publish("t", "b") == 1
