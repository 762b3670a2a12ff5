"""The producer's futures: concurrent.futures semantics on the shared, per-batch answers."""

from __future__ import annotations

from concurrent.futures import (
    ALL_COMPLETED,
    FIRST_COMPLETED,
    Future,
    TimeoutError,
    as_completed,
    wait,
)

import pytest

from spark_queue.errors import PayloadTooLargeError
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
        store.set_topic_limits("small", max_payload_bytes=4)
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
