"""Queue semantics in one process: enqueue, claim order, leases and fencing, retries, dead letters.

Time-dependent rules use the store functions' ``now_ms`` injection, so no test sleeps.
"""

from __future__ import annotations

import random

import pytest

from spark_queue.errors import (
    PayloadError,
    QueueConfigError,
    StaleLeaseError,
    UnknownJobError,
    UnknownQueueError,
)
from spark_queue.store import NewJob, Store
from spark_queue.store.queues import claims, queue_admin, queue_jobs
from spark_queue.store.queues import leases as queue_leases
from spark_queue.store.queues.queue_jobs import enqueue_rows

T0 = 1_000_000_000  # an arbitrary "now" for injected clocks


def enqueue_at(store, queue, jobs, now=T0):
    with store.write() as conn:
        return queue_jobs.enqueue_rows(conn, queue, jobs, now_ms=now)


def claim_at(store, queue, limit, now, lease_ms=None):
    with store.write() as conn:
        return claims.claim(conn, queue, limit, lease_ms=lease_ms, now_ms=now)


def test_enqueue_many_assigns_increasing_ids_and_roundtrips_payloads(store):
    q = store.queue("q")
    payloads = [{"a": 1}, "text", b"\x00bytes", "123", [1, 2], None]
    ids = q.enqueue_many(payloads)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    jobs = q.claim(10)
    assert [j.payload for j in jobs] == payloads
    assert isinstance(jobs[3].payload, str)  # text "123" stays text


def test_enqueue_many_is_all_or_nothing(store):
    q = store.queue("q")
    with pytest.raises(PayloadError, match="job 1 of the batch"):
        q.enqueue_many(["ok", object()])
    assert not q.exists()


def test_enqueue_rows_writes_inside_the_callers_transaction(store):
    with pytest.raises(RuntimeError), store.write() as conn:
        assert enqueue_rows(conn, "sinkq", [NewJob("a"), "b"]) == [1, 2]
        raise RuntimeError("the caller's transaction fails")
    assert store.queues() == []  # rolled back with the caller: not even the queue exists
    with store.write() as conn:
        ids = enqueue_rows(conn, "sinkq", [NewJob("a"), "b"])
    assert store.queue("sinkq").stats().ready == 2 and len(ids) == 2


def test_bad_job_options_fail_with_a_message_naming_them(store):
    q = store.queue("q")
    with pytest.raises(QueueConfigError, match="delay_ms"):
        q.enqueue("x", delay_ms=-1)
    with pytest.raises(QueueConfigError, match="ttl_ms"):
        q.enqueue("x", ttl_ms=0)
    with pytest.raises(QueueConfigError, match="idempotency_key"):
        q.enqueue("x", idempotency_key="")
    with pytest.raises(QueueConfigError, match="max_attempts"):
        q.configure(max_attempts=0)


def test_duplicate_idempotency_key_returns_the_original_id(store):
    q = store.queue("q", max_attempts=1)
    first = q.enqueue("a", idempotency_key="k")
    assert q.enqueue("again", idempotency_key="k") == first
    # within one batch, and mixed with keyless rows
    ids = q.enqueue_many(
        [NewJob("b", idempotency_key="k2"), NewJob("c"), NewJob("d", idempotency_key="k2")]
    )
    assert ids[0] == ids[2] != ids[1]
    # keys are per queue
    assert store.queue("other").enqueue("a", idempotency_key="k") != first
    # still held while the job is a dead letter
    for job in q.claim(10):
        q.nack(job, "boom")
    assert q.stats().dead == 3
    assert q.enqueue("again", idempotency_key="k") == first
    assert q.stats().ready == 0


def test_idempotency_key_outlives_its_acked_job_for_the_window(store):
    store.queue("q", idempotency_window_ms=1000)
    [first] = enqueue_at(store, "q", [NewJob("a", idempotency_key="k")], now=T0)
    store.queue("q").ack(claim_at(store, "q", 1, T0)[0])
    # acked, but within the window: a retried producer does not enqueue it again
    assert enqueue_at(store, "q", [NewJob("a", idempotency_key="k")], now=T0 + 999) == [first]
    assert store.queue("q").stats().ready == 0
    # past the window, with the job gone, the key is free
    [second] = enqueue_at(store, "q", [NewJob("a", idempotency_key="k")], now=T0 + 1000)
    assert second != first
    # past the window, a job still queued keeps its key
    assert enqueue_at(store, "q", [NewJob("b", idempotency_key="k")], now=T0 + 5000) == [second]


def test_sweep_forgets_keys_past_the_window_whose_job_is_gone(store):
    store.queue("q", idempotency_window_ms=1000)
    enqueue_at(
        store, "q", [NewJob("a", idempotency_key="done"), NewJob("b", idempotency_key="open")]
    )
    store.queue("q").ack([j for j in claim_at(store, "q", 2, T0) if j.payload == "a"][0])
    queue_admin.sweep_expired(store.file, "q", now_ms=T0 + 1000)
    keys = [r[0] for r in store.conn.execute("SELECT idempotency_key FROM sq_job_keys")]
    assert keys == ["open"]


def test_claim_order_is_priority_then_availability_then_id(store):
    ids = enqueue_at(
        store, "q", [NewJob("low"), NewJob("high", priority=5), NewJob("mid", priority=1)]
    )
    older = enqueue_at(store, "q", [NewJob("mid-older", priority=1)], now=T0 - 10)
    one_by_one = [claim_at(store, "q", 1, T0)[0] for _ in range(4)]
    assert [j.payload for j in one_by_one] == ["high", "mid-older", "mid", "low"]
    assert sorted(j.id for j in one_by_one) == sorted(ids + older)


def test_a_claimed_batch_shares_one_token_and_comes_back_by_priority(store):
    enqueue_at(store, "q", [NewJob("low"), NewJob("high", priority=5), NewJob("mid", priority=1)])
    jobs = claim_at(store, "q", 10, T0)
    assert [j.payload for j in jobs] == ["high", "mid", "low"]
    assert len({j.lease_token for j in jobs}) == 1


def test_claim_limit_takes_the_highest_priorities_first(store):
    enqueue_at(store, "q", [NewJob(i, priority=i % 3) for i in range(30)])
    jobs = claim_at(store, "q", 10, T0)
    assert all(j.priority == 2 for j in jobs)


def test_delayed_job_is_never_claimed_before_its_time(store):
    enqueue_at(store, "q", [NewJob("later", delay_ms=500), NewJob("now")])
    assert [j.payload for j in claim_at(store, "q", 10, T0 + 499)] == ["now"]
    assert [j.payload for j in claim_at(store, "q", 10, T0 + 500)] == ["later"]


def test_ttl_expiry_blocks_delivery_and_sweep_frees_the_job(store):
    enqueue_at(store, "q", [NewJob("short", ttl_ms=100), NewJob("long", ttl_ms=10_000)])
    jobs = claim_at(store, "q", 10, T0 + 100)
    assert [j.payload for j in jobs] == ["long"]
    assert queue_admin.sweep_expired(store.file, "q", now_ms=T0 + 100) == 1
    # a live lease protects a job from the sweep even past its TTL
    assert queue_admin.sweep_expired(store.file, "q", now_ms=T0 + 10_000) == 0
    store.queue("q").ack(jobs[0])
    assert store.queue("q").stats().ready == 0


def test_a_live_lease_hides_the_job_and_its_expiry_returns_it(store):
    enqueue_at(store, "q", ["a"])
    first = claim_at(store, "q", 1, T0, lease_ms=1000)
    assert claim_at(store, "q", 1, T0 + 999) == []
    again = claim_at(store, "q", 1, T0 + 1000)
    assert [j.id for j in again] == [first[0].id]
    assert again[0].attempts == 2 and again[0].lease_token != first[0].lease_token


def test_stale_token_ack_is_rejected_and_changes_nothing(store):
    q = store.queue("q")
    enqueue_at(store, "q", ["a"])
    old = claim_at(store, "q", 1, T0, lease_ms=10)[0]
    new = claim_at(store, "q", 1, T0 + 10, lease_ms=60_000)[0]
    before = q.get(old.id)
    with pytest.raises(StaleLeaseError, match="stale"):
        q.ack(old)
    with pytest.raises(StaleLeaseError):
        q.nack(old, "late failure")
    assert q.extend([old]).rejected == [old.id]
    assert q.release([old]).rejected == [old.id]
    assert q.get(old.id) == before  # nothing changed: still leased by the new holder
    q.ack(new)
    with pytest.raises(UnknownJobError):
        q.get(old.id)


def test_late_ack_is_accepted_while_nobody_reclaimed_the_job(store):
    enqueue_at(store, "q", ["a"])
    job = claim_at(store, "q", 1, T0, lease_ms=10)[0]
    store.queue("q").ack(job)  # the lease expired in the injected clock, but no one took it
    assert store.queue("q").stats() == ("q", 0, 0, 0, 0, None)


def test_ack_many_reports_stale_leases_and_acks_the_rest(store):
    enqueue_at(store, "q", ["a", "b", "c"])
    jobs = claim_at(store, "q", 3, T0, lease_ms=10)
    retaken = claim_at(store, "q", 1, T0 + 10)[0]
    result = store.queue("q").ack_many(jobs)
    assert result.rejected == [retaken.id]
    assert sorted(result.done) == sorted(j.id for j in jobs if j.id != retaken.id)


def test_ack_and_claim_acks_the_batch_and_leases_the_next_together(store):
    q = store.queue("q")
    q.enqueue_many(range(5))
    first = q.claim(2)
    acked, second = q.ack_and_claim(first, 2)
    assert sorted(acked.done) == sorted(j.id for j in first) and acked.rejected == []
    assert [j.payload for j in second] == [2, 3]
    assert q.stats()[1:3] == (1, 2)  # one ready, two leased; the first two are gone


def test_nack_backoff_grows_exponentially_with_jitter_up_to_the_cap(store):
    config = store.queue("q", backoff_base_ms=100, backoff_cap_ms=1000).config()
    rng = random.Random(7)
    for attempts, full in [(1, 100), (2, 200), (3, 400), (4, 800), (5, 1000), (40, 1000)]:
        delays = {queue_leases.backoff_ms(config, attempts, rng) for _ in range(200)}
        assert min(delays) >= full // 2 and max(delays) <= full
        assert len(delays) > 1  # jittered


def test_nack_delays_the_retry_and_keeps_the_error(store):
    store.queue("q", backoff_base_ms=1000, backoff_cap_ms=1000)
    enqueue_at(store, "q", ["a"])
    job = claim_at(store, "q", 1, T0)[0]
    with store.write() as conn:
        result = queue_leases.nack(conn, "q", [job], "boom", now_ms=T0)
    assert result.retried == [job.id]
    assert claim_at(store, "q", 1, T0 + 499) == []
    retry = claim_at(store, "q", 1, T0 + 1000)[0]
    assert retry.attempts == 2 and retry.last_error == "boom"


def test_always_failing_job_is_dead_lettered_at_max_attempts_and_requeue_returns_it(store):
    q = store.queue("q", max_attempts=3)
    job_id = q.enqueue("poison")
    for attempt in range(1, 4):
        job = q.claim(1)[0]
        assert job.attempts == attempt
        assert q.nack(job, f"error {attempt}", delay_ms=0) == ("dead" if attempt == 3 else "retry")
    assert q.claim(1) == []
    [dead] = q.dead_letters()
    assert (dead.id, dead.state, dead.attempts, dead.last_error) == (job_id, "dead", 3, "error 3")
    assert q.stats().dead == 1
    assert q.requeue_dead() == [job_id]
    again = q.claim(1)[0]
    assert (again.id, again.attempts, again.payload) == (job_id, 1, "poison")


def test_per_job_max_attempts_overrides_the_queue(store):
    q = store.queue("q", max_attempts=5)
    q.enqueue("once", max_attempts=1)
    job = q.claim(1)[0]
    assert job.max_attempts == 1
    assert q.nack(job, "no retries") == "dead"


def test_lease_expiring_on_the_last_attempt_dead_letters_the_job(store):
    store.queue("q", max_attempts=2)
    enqueue_at(store, "q", ["slow"])
    claim_at(store, "q", 1, T0, lease_ms=10)
    claim_at(store, "q", 1, T0 + 10, lease_ms=10)
    assert claim_at(store, "q", 1, T0 + 20) == []
    [dead] = store.queue("q").dead_letters()
    assert dead.attempts == 2 and "expired" in dead.last_error


def test_extend_keeps_a_long_job_leased(store):
    enqueue_at(store, "q", ["long"])
    job = claim_at(store, "q", 1, T0, lease_ms=100)[0]
    with store.write() as conn:
        assert queue_leases.extend(conn, "q", [job], lease_ms=100, now_ms=T0 + 90).done == [job.id]
    assert claim_at(store, "q", 1, T0 + 150) == []
    assert len(claim_at(store, "q", 1, T0 + 190)) == 1


def test_release_returns_jobs_at_once_without_counting_the_attempt(store):
    q = store.queue("q")
    q.enqueue_many(["a", "b"])
    jobs = q.claim(2)
    assert sorted(q.release(jobs).done) == sorted(j.id for j in jobs)
    assert [j.attempts for j in q.claim(2)] == [1, 1]


def test_batch_larger_than_max_size_fails_at_once(store):
    from spark_queue.errors import QueueBatchTooLargeError

    q = store.queue("q", max_size=3)
    with pytest.raises(QueueBatchTooLargeError, match="max_size 3"):
        q.enqueue_many(["a"] * 4, wait_ms=None)  # would never fit: no waiting
    assert q.stats().ready == 0


def test_full_queue_fails_at_once_or_after_the_wait(store):
    from spark_queue.errors import QueueFullError

    q = store.queue("q", max_size=2)
    q.enqueue_many(["a", "b"])
    with pytest.raises(QueueFullError, match="max_size 2"):
        q.enqueue("c")
    with pytest.raises(QueueFullError):
        q.enqueue("c", wait_ms=30)
    assert q.stats().ready == 2


def test_full_queue_enqueue_waits_until_a_worker_makes_room(store, store_path):
    import threading

    q = store.queue("q", max_size=2)
    q.enqueue_many(["a", "b"])
    waiting = threading.Event()

    def consumer() -> None:
        with Store(store_path) as other:
            waiting.wait()
            oq = other.queue("q")
            oq.ack(oq.claim(1)[0])

    thread = threading.Thread(target=consumer)
    thread.start()
    waiting.set()
    job_id = q.enqueue("c", wait_ms=10_000)
    thread.join()
    assert q.get(job_id).state == "ready" and q.stats().ready == 2


def test_stats_count_each_state(store):
    store.queue("q", max_attempts=1)
    enqueue_at(store, "q", ["r1", "r2", NewJob("d", delay_ms=1000), "l", "x"], now=T0)
    with store.write() as conn:
        leased = claims.claim(conn, "q", 2, now_ms=T0 + 5)
        queue_leases.nack(conn, "q", leased[1:], "bad", now_ms=T0 + 5)
        stats = queue_admin.stats(conn, "q", now_ms=T0 + 10)[0]
    assert stats == ("q", 2, 1, 1, 1, 10)


def test_claim_uses_the_claim_index_without_sorting(store):
    enqueue_at(store, "q", [NewJob(i, priority=i % 4) for i in range(2000)])
    plan = "\n".join(
        str(row[-1])
        for row in store.conn.execute(
            "EXPLAIN QUERY PLAN " + claims._CLAIM, (1, 2, 1, T0, T0, T0, 128)
        )
    )
    assert "USING INDEX sq_jobs_claim" in plan, plan
    assert "TEMP B-TREE" not in plan, plan
    assert "SCAN sq_jobs\n" not in plan + "\n", plan  # no full table scan


def test_peek_purge_get_remove(store):
    q = store.queue("q")
    ids = q.enqueue_many(["a", NewJob("b", priority=1), "c"])
    assert [j.payload for j in q.peek(2)] == ["b", "a"]
    assert q.get(ids[0]).state == "ready"
    assert q.remove(ids[0]) == "queued"
    with pytest.raises(UnknownJobError):
        q.remove(ids[0])
    leased = q.claim(1)[0]
    assert q.purge() == 1  # the leased job stays
    q.ack(leased)
    with pytest.raises(UnknownQueueError):
        store.queue("missing").stats()
    assert store.queue("missing").claim(5) == []


def test_dead_letters_purge_and_delete_queue(store):
    q = store.queue("q", max_attempts=1)
    q.enqueue_many(["a", "b"])
    for job in q.claim(2):
        q.nack(job, "x")
    assert q.purge_dead([q.dead_letters()[0].id]) == 1
    assert q.purge_dead() == 1
    q.enqueue("c")
    assert store.delete_queue("q") == 1
    assert store.queues() == []


def commits_with_changes(store):
    """Rows each write transaction of ``store`` changed, noted at its commit."""
    changes = [store.conn.total_changes()]

    def hook():
        changes.append(store.conn.total_changes())
        return False

    store.conn.set_commit_hook(hook)
    return changes


def wait_past_every_ttl(store):
    from spark_queue.store.file.connection import now_ms

    [[expiry]] = store.conn.execute("SELECT max(expires_at) FROM sq_jobs").fetchall()
    while now_ms() <= expiry:  # a 1 ms TTL passes
        pass


def steps_of_sweep(store, sweep):
    changes = commits_with_changes(store)
    swept = sweep()
    store.conn.set_commit_hook(None)
    return swept, [b - a for a, b in zip(changes, changes[1:], strict=False)]


def test_the_ttl_sweep_deletes_in_steps_of_at_most_step_rows_and_step_bytes(store):
    """The sweep was one transaction over every expired job (two unbounded DELETEs per
    queue): 200,000 of them held the write lock 0.62 s, growing with the backlog."""
    from spark_queue.store.file.steps import STEP_ROWS

    small = store.queue("small")
    small.enqueue_many([NewJob(n, ttl_ms=1) for n in range(2 * STEP_ROWS + 500)])
    large = store.queue("large")
    large.enqueue_many([NewJob(b"x" * 2**20, ttl_ms=1) for _ in range(20)])
    wait_past_every_ttl(store)
    swept, per_step = steps_of_sweep(store, store.housekeeping.sweep_expired)
    assert swept == 2 * STEP_ROWS + 520
    assert max(per_step) <= STEP_ROWS and len(per_step) >= 3, per_step
    large.enqueue_many([NewJob(b"x" * 2**20, ttl_ms=1) for _ in range(20)])
    wait_past_every_ttl(store)
    swept, per_step = steps_of_sweep(store, large.sweep_expired)
    # docs/operations.md: at most 8 MiB of payloads per step.
    assert swept == 20 and max(per_step) <= 8 and sum(per_step) == 20, per_step
    assert small.stats().ready == large.stats().ready == 0
