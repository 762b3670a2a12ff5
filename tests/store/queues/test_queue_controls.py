"""Queue controls in one process: pause, the lease cap, the rate limit, payload size limits,
and the schema migration that added them.

Time-dependent rules use the store functions' ``now_ms`` injection, so no test sleeps.
"""

from __future__ import annotations

import random
from typing import get_args, get_type_hints

import apsw
import pytest

from spark_queue.errors import OptionError, PayloadTooLargeError, QueueConfigError
from spark_queue.store import NewJob, Record, Store
from spark_queue.store.file.schema import MIGRATIONS, latest_version
from spark_queue.store.queues import claims, queue_admin, queue_jobs
from spark_queue.store.queues import controls as queue_controls
from spark_queue.store.queues.leases import ack, extend, release
from spark_queue.store.queues.queue_config import QueueSettings
from spark_queue.store.streams import topic_log

T0 = 1_000_000_000


def enqueue_at(store, queue, jobs, now=T0):
    with store.write() as conn:
        return queue_jobs.enqueue_rows(conn, queue, jobs, now_ms=now)


def configure_at(store, queue, now=T0, **settings):
    with store.write() as conn:
        return queue_admin.configure(conn, queue, settings, now_ms=now)


def claim_at(store, queue, limit, now, lease_ms=None):
    with store.write() as conn:
        return claims.claim(conn, queue, limit, lease_ms=lease_ms, now_ms=now)


def admission_at(store, queue, now):
    config = store.queue(queue).config()
    return queue_controls.admission(store.conn, config, now)


def data_version(conn: apsw.Connection) -> int:
    return conn.execute("PRAGMA data_version").fetchall()[0][0]


# -- migration ----------------------------------------------------------------
def test_a_version_2_store_migrates_forward_keeping_its_queues_and_jobs(store_path):
    conn = apsw.Connection(store_path)
    for version, script in enumerate(MIGRATIONS[:2], start=1):
        conn.execute(script)
        conn.execute(f"PRAGMA user_version={version}")
    conn.execute("PRAGMA application_id=0x53514C51")
    conn.execute("INSERT INTO sq_queues (name, created_ms) VALUES ('old', 1)")
    conn.execute(
        "INSERT INTO sq_jobs (queue_id, available_at, enqueued_ms, value, value_type) "
        "VALUES (1, 0, 0, 'kept', 1)"
    )
    conn.execute("INSERT INTO sq_topics (name, created_ms) VALUES ('t', 1)")
    conn.close()
    with Store(store_path) as store:
        assert store.conn.execute("PRAGMA user_version").fetchall()[0][0] == latest_version()
        config = store.queue("old").config()
        assert (config.paused, config.max_leased, config.rate_limit_per_s) == (False, None, None)
        assert config.max_payload_bytes is None
        assert store.topics()[0].max_payload_bytes is None
        [job] = store.queue("old").claim(5)
        assert job.payload == "kept"


# -- pause ----------------------------------------------------------------------
def test_paused_queue_claims_nothing_but_takes_enqueues_and_lets_leases_finish(store):
    q = store.queue("q")
    q.enqueue_many(["a", "b", "c"])
    [held] = q.claim(1)
    q.pause()
    assert q.claim(10) == []
    assert q.admission() == queue_controls.Admission(0, "paused")
    q.enqueue("during the pause")
    assert q.extend([held]).done == [held.id]
    acked, more = q.ack_and_claim([held], 10)
    assert acked.done == [held.id] and more == []
    assert q.stats().ready == 3
    q.resume()
    assert [j.payload for j in q.claim(10)] == ["b", "c", "during the pause"]


def test_a_refused_claim_writes_nothing(store, store_path):
    """Refused claims must not change data_version: idle workers watch it and would wake."""
    watcher = apsw.Connection(store_path)
    q = store.queue("q")
    enqueue_at(store, "q", range(10))
    configure_at(store, "q", max_leased=1, rate_limit_per_s=1.0, rate_burst=1)
    assert len(claim_at(store, "q", 5, T0)) == 1
    before = data_version(watcher)
    assert claim_at(store, "q", 5, T0 + 10) == []  # at the cap
    assert data_version(watcher) == before
    configure_at(store, "q", max_leased=None)
    before = data_version(watcher)
    assert claim_at(store, "q", 5, T0 + 20) == []  # out of tokens
    assert data_version(watcher) == before
    q.pause()
    before = data_version(watcher)
    assert q.claim(5) == []  # paused
    assert data_version(watcher) == before
    q.resume()
    assert data_version(watcher) != before  # the watcher does see real commits


# -- max_leased ----------------------------------------------------------------
def test_max_leased_caps_live_leases_and_each_finish_frees_a_slot(store):
    q = store.queue("q", max_leased=3)
    q.enqueue_many(range(10))
    first = q.claim(10)
    assert len(first) == 3 and q.claim(10) == []
    admission = q.admission()
    assert (admission.allowed, admission.held_by, admission.leased) == (0, "max_leased", 3)
    q.ack(first[0])
    [second] = q.claim(10)
    with store.write() as conn:
        release(conn, "q", [first[1]])
    [third] = q.claim(10)
    q.nack(first[2], "boom", delay_ms=0)
    assert len(q.claim(10)) == 1
    assert q.claim(10) == [] and second.id != third.id


def test_an_expired_lease_stops_counting_against_the_cap(store):
    configure_at(store, "q", max_leased=2)
    enqueue_at(store, "q", range(5))
    assert len(claim_at(store, "q", 5, T0, lease_ms=1000)) == 2
    assert claim_at(store, "q", 5, T0 + 999) == []
    assert admission_at(store, "q", T0 + 999).retry_after_ms == 1
    assert len(claim_at(store, "q", 5, T0 + 1000, lease_ms=1000)) == 2


def test_a_late_heartbeat_cannot_revive_a_lease_past_the_cap(store):
    configure_at(store, "q", max_leased=1)
    enqueue_at(store, "q", range(3))
    [old] = claim_at(store, "q", 1, T0, lease_ms=1000)
    [new] = claim_at(store, "q", 1, T0 + 1000, lease_ms=1000)
    with store.write() as conn:
        assert extend(conn, "q", [old], now_ms=T0 + 1001).rejected == [old.id]
        assert extend(conn, "q", [new], now_ms=T0 + 1001).done == [new.id]
    assert admission_at(store, "q", T0 + 1001).leased == 1


def test_setting_a_cap_counts_the_leases_already_held(store):
    q = store.queue("q")
    q.enqueue_many(range(10))
    held = q.claim(4)
    q.configure(max_leased=3)
    assert q.claim(1) == [] and q.admission().leased == 4
    q.ack_many(held[:2])
    assert len(q.claim(10)) == 1
    q.configure(max_leased=None)
    assert len(q.claim(10)) == 5
    assert store.conn.execute("SELECT count(*) FROM sq_queue_leases").fetchone()[0] == 0


def test_the_lease_table_stays_near_the_cap_while_jobs_flow(store):
    q = store.queue("q", max_leased=4)
    q.enqueue_many(range(1000))
    jobs = q.claim(4)
    while jobs:
        _, jobs = q.ack_and_claim(jobs, 4)
        rows = store.conn.execute("SELECT count(*) FROM sq_queue_leases").fetchone()[0]
        assert rows <= 8
    assert q.stats().ready == 0


# -- rate limit -------------------------------------------------------------------
def test_rate_limit_starts_with_a_full_burst_then_refills_with_time(store):
    enqueue_at(store, "q", range(100))
    configure_at(store, "q", rate_limit_per_s=10, rate_burst=5)
    assert len(claim_at(store, "q", 100, T0)) == 5
    assert claim_at(store, "q", 100, T0) == []
    admission = admission_at(store, "q", T0)
    assert (admission.held_by, admission.retry_after_ms) == ("rate_limit", 100)
    assert claim_at(store, "q", 100, T0 + 99) == []
    assert len(claim_at(store, "q", 100, T0 + 100)) == 1
    assert len(claim_at(store, "q", 100, T0 + 10_000)) == 5  # never more than the burst


def test_the_default_burst_is_the_rate_and_at_least_one(store):
    enqueue_at(store, "q", range(100))
    enqueue_at(store, "slow", range(10))
    configure_at(store, "q", rate_limit_per_s=20)
    configure_at(store, "slow", rate_limit_per_s=0.5)
    assert len(claim_at(store, "q", 100, T0)) == 20
    assert len(claim_at(store, "slow", 100, T0)) == 1
    assert claim_at(store, "slow", 100, T0 + 1999) == []
    assert len(claim_at(store, "slow", 100, T0 + 2000)) == 1


def test_no_window_ever_gets_more_than_burst_plus_rate_times_its_length(store):
    rate, burst = 25.0, 4
    enqueue_at(store, "q", range(5000))
    configure_at(store, "q", rate_limit_per_s=rate, rate_burst=burst)
    rng = random.Random(7)
    now, claims = T0, []
    for _ in range(2000):
        now += rng.choice((0, 1, 3, 10, 40, 100))
        got = claim_at(store, "q", rng.randint(1, 8), now)
        claims.extend([now] * len(got))
    assert len(claims) > 1000
    for i in range(len(claims)):
        for j in range(i, min(len(claims), i + 60)):
            assert j - i + 1 <= burst + rate * (claims[j] - claims[i]) / 1000 + 1e-6


def test_changing_the_rate_keeps_earned_tokens_and_never_adds_unearned_ones(store):
    enqueue_at(store, "q", range(100))
    configure_at(store, "q", rate_limit_per_s=10, rate_burst=10)
    assert len(claim_at(store, "q", 100, T0)) == 10
    configure_at(store, "q", T0 + 500, rate_burst=50)  # 5 tokens earned, none granted
    assert len(claim_at(store, "q", 100, T0 + 500)) == 5
    configure_at(store, "q", T0 + 500, rate_limit_per_s=None)
    assert len(claim_at(store, "q", 100, T0 + 500)) == 85


def test_a_clock_stepping_back_adds_no_tokens(store):
    enqueue_at(store, "q", range(10))
    configure_at(store, "q", rate_limit_per_s=1, rate_burst=1)
    assert len(claim_at(store, "q", 5, T0)) == 1
    assert claim_at(store, "q", 5, T0 - 60_000) == []
    assert claim_at(store, "q", 5, T0 + 999) == []
    assert len(claim_at(store, "q", 5, T0 + 1000)) == 1


def test_limits_apply_to_ack_and_claim_and_combine(store):
    enqueue_at(store, "q", range(50))
    configure_at(store, "q", max_leased=3, rate_limit_per_s=1000, rate_burst=2)
    assert len(claim_at(store, "q", 10, T0)) == 2  # the bucket is the tighter limit
    with store.write() as conn:
        jobs = claims.claim(conn, "q", 10, now_ms=T0 + 100)
        assert len(jobs) == 1  # now the cap is
        ack(conn, "q", jobs)
        assert len(claims.claim(conn, "q", 10, now_ms=T0 + 100)) == 1


def test_the_typed_settings_are_the_settings_a_queue_accepts():
    # Store.queue(name, **settings) and Queue.configure are typed by QueueSettings; the
    # names it lists and the names configure checks are one set.
    assert set(QueueSettings.__annotations__) == set(queue_admin.SETTINGS)
    nullable = {name for name, kind in get_type_hints(QueueSettings).items()
                if type(None) in get_args(kind)}
    assert nullable == queue_admin.NULLABLE


def test_bad_control_settings_fail_with_a_message_naming_them(store):
    q = store.queue("q")
    for settings, match in (
        ({"rate_limit_per_s": 0}, "rate_limit_per_s"),
        ({"rate_limit_per_s": "fast"}, "rate_limit_per_s"),
        ({"rate_burst": 0}, "rate_burst"),
        ({"max_leased": 0}, "max_leased"),
        ({"max_leased": True}, "max_leased"),
        ({"paused": 1}, "paused must be True or False"),
        ({"max_payload_bytes": -5}, "max_payload_bytes"),
    ):
        with pytest.raises(QueueConfigError, match=match):
            q.configure(**settings)
    with pytest.raises(OptionError, match="max_payload_bytes"):
        store.topic("t").set_limits(max_payload_bytes=0)


# -- payload size limits --------------------------------------------------------------
def test_a_payload_over_the_queue_limit_is_refused_naming_the_row_and_nothing_is_stored(store):
    q = store.queue("q", max_payload_bytes=10)
    q.enqueue("x" * 10)  # at the limit is fine
    with pytest.raises(PayloadTooLargeError, match=r"row 2 of the batch.* 11 bytes.*10"):
        q.enqueue_many(["a", NewJob("b"), "y" * 11])
    with pytest.raises(PayloadTooLargeError, match="row 0"):
        q.enqueue("é" * 6)  # 6 characters, 12 UTF-8 bytes
    with pytest.raises(PayloadTooLargeError, match="row 0"):
        q.enqueue({"k": "v" * 10})  # JSON text is measured as stored
    with pytest.raises(PayloadTooLargeError):
        q.enqueue(b"\0" * 11)
    assert q.stats().ready == 1
    q.configure(max_payload_bytes=None)
    q.enqueue("y" * 1000)


def test_a_value_over_the_topic_limit_fails_the_publish_whole(store):
    store.publish("t", "before")
    store.topic("t").set_limits(max_payload_bytes=8)
    assert store.topics()[0].max_payload_bytes == 8
    with pytest.raises(PayloadTooLargeError, match="topic 't' refuses row 1 of the batch"):
        store.publish_many("t", ["ok", Record("x" * 9), "ok"])
    with pytest.raises(PayloadTooLargeError):
        store.publish("t", b"123456789")
    assert store.topic("t").bounds() == (0, 1)
    store.publish_many("t", ["12345678", "ééé"])
    store.topic("t").set_limits(max_payload_bytes=None)
    store.publish("t", "x" * 100)
    assert store.topic("t").bounds() == (0, 4)


def test_encoded_and_routed_appends_name_the_row_in_the_whole_batch(store):
    store.topic("small").set_limits(max_payload_bytes=3)
    chunks = [
        topic_log.EncodedChunk(["a", "bb"], 1, topics=["small", "big"]),
        topic_log.EncodedChunk(["cc", "dddd"], 1, topics=["big", "small"]),
    ]
    refused = "topic 'small' refuses row 3"
    with pytest.raises(PayloadTooLargeError, match=refused), store.write() as conn:
        topic_log.append_routed(conn, chunks)
    chunks = [topic_log.EncodedChunk(["a", "b"], 1), topic_log.EncodedChunk([b"c", b"dddd"], 0)]
    with pytest.raises(PayloadTooLargeError, match="row 3"), store.write() as conn:
        topic_log.append_encoded(conn, "small", chunks)
    assert store.topic("small").bounds() == (0, 0)
    assert not store.topic("big").exists()


def test_admission_of_a_queue_that_does_not_exist_is_open_like_its_claim(store):
    assert store.queue("nope").admission() == queue_controls.Admission(None)
    assert store.queue("nope").claim(5) == []
    assert store.queues() == []  # looking created nothing


def test_deleting_a_capped_queue_forgets_its_tracked_leases(store):
    q = store.queue("q", max_leased=5)
    q.enqueue_many(range(5))
    q.claim(5)
    store.delete_queue("q")
    assert store.conn.execute("SELECT count(*) FROM sq_queue_leases").fetchone()[0] == 0
