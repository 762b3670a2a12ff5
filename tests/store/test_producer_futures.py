"""The producer's futures: concurrent.futures semantics on the shared, per-batch answers."""

from __future__ import annotations

import collections
import threading
import time
from concurrent.futures import (
    ALL_COMPLETED,
    FIRST_COMPLETED,
    Future,
    TimeoutError,
    as_completed,
    wait,
)

import pytest

from spark_queue.errors import PayloadTooLargeError, StoreError
from spark_queue.store import Producer, Store

HOLD_MS = 600_000  # a linger no test waits out: calls stay queued until flush


def test_futures_are_concurrent_futures_that_wait_and_as_completed_see_answered(store_path):
    with Producer(store_path, linger_ms=HOLD_MS) as producer:
        futures = [producer.publish_nowait("t", i) for i in range(5)]
        assert all(isinstance(f, Future) for f in futures)
        assert not any(f.done() for f in futures)
        # Nothing is written before the flush: wait() must time out, not see false answers.
        done, pending = wait(futures, timeout=0.01, return_when=FIRST_COMPLETED)
        assert not done and len(pending) == 5
        producer.flush()
        done, pending = wait(futures, timeout=60, return_when=ALL_COMPLETED)
        assert len(done) == 5 and not pending
        assert sorted(f.result() for f in as_completed(futures, timeout=60)) == [0, 1, 2, 3, 4]


def test_a_waiting_result_is_not_woken_early_by_another_calls_answer(store_path):
    with Producer(store_path, linger_ms=HOLD_MS) as producer:
        first = producer.publish_nowait("t", "first")
        producer.flush()
        held = producer.publish_nowait("t", "held")
        assert first.result(timeout=60) == 0
        with pytest.raises(TimeoutError):
            held.result(timeout=0.05)
        producer.flush()
        assert held.result(timeout=60) == 1 and held.exception() is None


def test_a_sent_call_cannot_be_cancelled_and_is_written(store_path):
    with Producer(store_path, linger_ms=HOLD_MS) as producer:
        future = producer.publish_nowait("t", "kept")
        assert future.cancel() is False and not future.cancelled()
    assert future.result() == 0
    with Store(store_path) as store:
        assert [e.value for e in store.read("t")] == ["kept"]


def test_callbacks_run_once_answered_and_at_once_when_added_after(store_path):
    seen = []
    with Store(store_path) as store:
        store.topic("small").set_limits(max_payload_bytes=4)
    with Producer(store_path, linger_ms=HOLD_MS) as producer:
        fits = producer.publish_nowait("small", "ok")
        too_big = producer.publish_nowait("small", "x" * 10)
        fits.add_done_callback(lambda f: seen.append(("fits", f.result())))
        too_big.add_done_callback(lambda f: seen.append(("too big", type(f.exception()))))
        assert seen == []
        producer.flush()
        assert sorted(seen) == [("fits", 0), ("too big", PayloadTooLargeError)]
        fits.add_done_callback(lambda f: seen.append(("late", f.result())))
        assert seen[-1] == ("late", 0)
        with pytest.raises(PayloadTooLargeError):
            too_big.result()


def test_nowait_and_blocking_calls_from_many_threads_keep_thread_order_and_dense_offsets(
    store_path,
):
    # *_nowait calls queue without the producer's lock while a writer leads:
    # mixed with blocking calls, each thread's calls still commit in its order.
    returned = {}
    with Producer(store_path) as producer:

        def send(t):
            answers = [producer.publish("t", {"t": t, "seq": i}) if i % 7 == 0
                       else producer.publish_nowait("t", {"t": t, "seq": i})
                       for i in range(2000)]
            returned[t] = [a if type(a) is int else a.result(timeout=60) for a in answers]

        threads = [threading.Thread(target=send, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    with Store(store_path) as reader:
        events = reader.read("t")
    assert [e.offset for e in events] == list(range(16_000))
    for t in range(8):
        assert returned[t] == sorted(returned[t])
        assert [events[o].value for o in returned[t]] == [{"t": t, "seq": i} for i in range(2000)]


def test_a_nowait_call_racing_close_is_written_or_refused_never_left_unanswered(store_path):
    # Whichever way each call and the close interleave, a call either raises
    # "closed" or returns a future that resolves to its stored offset.
    sent: list[list] = [[] for _ in range(4)]
    started = threading.Barrier(5)
    producer = Producer(store_path)

    def send(t):
        started.wait()
        seq = 0
        while True:
            try:
                sent[t].append((producer.publish_nowait("t", f"{t}-{seq}"), f"{t}-{seq}"))
            except StoreError as exc:
                assert "is closed" in str(exc)
                return
            seq += 1

    threads = [threading.Thread(target=send, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    started.wait()
    while producer.calls_done < 1000:  # close while the threads are still sending
        time.sleep(0.001)
    producer.close()
    for thread in threads:
        thread.join()
    with Store(store_path) as reader:
        stored = [e.value for e in reader.read("t")]
    answered = [(future.result(timeout=60), value) for row in sent for future, value in row]
    assert len(stored) == len(answered)
    assert all(stored[offset] == value for offset, value in answered)


def test_a_nowait_call_queued_as_the_writer_looks_last_is_still_written(store_path):
    # The interleaving made certain: the writer finds the queue empty, and a
    # *_nowait call is queued (without the lock, seeing a writer lead) before the
    # writer drops the lead. The writer must look once more, or the call waits forever.
    producer = Producer(store_path, linger_ms=0)
    late = []

    class LastLook(collections.deque):
        armed = False

        def __len__(self):
            n = super().__len__()
            if self.armed and threading.get_ident() == producer._writer.ident:
                self.armed = False
                late.append(producer.publish_nowait("t", "late"))
            return n

    producer._pending = LastLook()
    first = producer.publish_nowait("t", "first")
    first.add_done_callback(lambda _: setattr(producer._pending, "armed", True))
    try:
        assert first.result(timeout=60) == 0
        while not late:
            time.sleep(0.001)
        assert late[0].result(timeout=60) == 1
    finally:
        producer.close()
