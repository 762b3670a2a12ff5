"""Housekeeping: retention, dead-letter retention and the WAL's bound, applied by the
store's own processes, one at a time (a lease in sq_meta), when due."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from spark_queue.errors import OptionError
from spark_queue.store import Housekeeper, Store
from spark_queue.store.file.connection import now_ms


def wait_for(condition, timeout_s=60.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_a_run_applies_every_topics_stored_retention_and_records_it(store):
    store.topic("kept").configure(retention_rows=5)
    store.topic("free").configure()
    store.publish_many("kept", range(20))
    store.publish_many("free", range(20))
    run = store.housekeeping.run()
    assert (run.deleted_events, run.held_back, run.complete) == (15, [], True)
    assert store.topic("kept").bounds() == (15, 20)
    assert store.topic("free").bounds() == (0, 20)
    status = store.housekeeping.status()
    assert status.last_run == run
    assert status.lease_holder is None  # released at the end of the run


def test_a_consumer_holding_retention_back_is_recorded_and_keeps_its_events(store):
    store.topic("t").configure(retention_rows=2)
    store.publish_many("t", range(10))
    store.commit_offsets("slow", {"t": 3})
    run = store.housekeeping.run()
    assert run.deleted_events == 3
    assert [tuple(h)[:3] for h in run.held_back] == [("t", "slow", 5)]
    assert store.topic("t").bounds()[0] == 3


def test_no_run_while_another_process_holds_the_lease_and_one_after_it_expires(store):
    store.topic("t").configure(retention_rows=1)
    store.publish_many("t", range(5))
    with store.write() as conn:
        conn.execute("INSERT OR REPLACE INTO sq_meta VALUES ('housekeeping_lease', ?)",
                     (json.dumps({"holder": "other", "until_ms": now_ms() + 600_000,
                                  "renewed_ms": now_ms()}),))
    assert store.housekeeping.run() is None
    assert store.topic("t").bounds()[0] == 0
    with store.write() as conn:  # the holder died: its lease ran out
        conn.execute("UPDATE sq_meta SET value = ? WHERE key = 'housekeeping_lease'",
                     (json.dumps({"holder": "other", "until_ms": now_ms() - 1}),))
    assert store.housekeeping.run().deleted_events == 4


def test_dead_letters_beyond_their_retention_are_deleted_oldest_first(store):
    q = store.queue("q", max_attempts=1)
    q.enqueue_many(list(range(5)))
    for job in q.claim(5):
        q.nack(job, "boom")
    assert q.stats().dead == 5
    q.configure(dead_retention_rows=2)
    assert store.housekeeping.run().deleted_dead_letters == 3
    assert sorted(d.payload for d in q.dead_letters()) == [3, 4]
    q.configure(dead_retention_rows=None, dead_retention_ms=1)
    wait_for(lambda: now_ms() > max(d.dead_ms for d in q.dead_letters()) + 1)
    assert store.housekeeping.run().deleted_dead_letters == 2
    assert q.stats().dead == 0


def test_the_interval_is_a_store_setting_and_zero_switches_self_applied_runs_off(store):
    assert store.housekeeping.status().interval_ms == 30_000
    store.housekeeping.set_interval(0)
    store.topic("t").configure(retention_rows=1)
    store.publish_many("t", range(5))
    keeper = Housekeeper(store.path, check_every_s=0.01).start()
    try:
        with Store(store.path) as other:  # a check of its own: not due while off
            from spark_queue.store.floor.housekeeping import run_housekeeping

            assert run_housekeeping(other.file, due_only=True) is None
    finally:
        keeper.stop()
    assert keeper.runs == 0 and store.topic("t").bounds()[0] == 0
    assert store.housekeeping.run() is not None  # asked for: runs even when off
    with pytest.raises(OptionError, match="housekeeping_interval_ms"):
        store.housekeeping.set_interval(-1)


def test_a_housekeeper_applies_retention_with_no_command(store):
    store.housekeeping.set_interval(1)
    store.topic("t").configure(retention_rows=10)
    keeper = Housekeeper(store.path, check_every_s=0.01).start()
    try:
        store.publish_many("t", range(100))
        wait_for(lambda: store.topic("t").bounds()[0] == 90)
        store.publish_many("t", range(100))
        wait_for(lambda: store.topic("t").bounds()[0] == 190)
    finally:
        keeper.stop()
    assert store.housekeeping.status().last_run.holder == keeper.holder


HOLD_LEASE_AND_HANG = """
import sys, time
from spark_queue.store import Store
from spark_queue.store.floor import housekeeping
with Store(sys.argv[1]) as store:
    with store.write() as conn:
        assert housekeeping._take_lease(conn, "doomed", int(sys.argv[2]))
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.mark.slow
def test_a_sigkilled_holders_lease_expires_and_another_process_runs(store):
    store.topic("t").configure(retention_rows=1)
    store.publish_many("t", range(5))
    lease_ms = 3_000
    child = subprocess.Popen([sys.executable, "-c", HOLD_LEASE_AND_HANG, store.path,
                              str(lease_ms)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        until = store.housekeeping.status().lease_until_ms
        run = store.housekeeping.run()
        if now_ms() < until:  # asked while the dead holder's lease still ran
            assert run is None and store.topic("t").bounds()[0] == 0
        wait_for(lambda: store.housekeeping.run() is not None or store.topic("t").bounds()[0] == 4)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert store.topic("t").bounds()[0] == 4
    assert store.housekeeping.status().last_run.holder != "doomed"


def burst(store, total_bytes):
    """Publish ``total_bytes`` of payloads in one transaction (a large sink batch): the WAL
    holds all of it until a checkpoint."""
    payload = "x" * 4000
    store.publish_many("t", (payload for _ in range(total_bytes // len(payload))))


@pytest.mark.parametrize("burst_mb", [
    80, pytest.param(500, marks=pytest.mark.slow, id="500"),
])
def test_the_wal_returns_below_its_limit_after_a_burst(store, burst_mb):
    from spark_queue.defaults import WAL_LIMIT_BYTES

    wal = store.path + "-wal"
    burst(store, burst_mb * 2**20)
    assert os.path.getsize(wal) > burst_mb * 2**20
    store.housekeeping.run()
    assert os.path.getsize(wal) <= WAL_LIMIT_BYTES


def test_a_reader_holding_a_snapshot_keeps_the_wal_until_it_ends(store):
    from spark_queue.defaults import WAL_LIMIT_BYTES

    wal = store.path + "-wal"
    store.publish("t", 0)
    with Store(store.path) as reader, reader.snapshot():
        reader.read("t", 0)  # the snapshot is taken at the first read
        burst(store, WAL_LIMIT_BYTES * 5 // 4)
        store.housekeeping.run()
        # The checkpoint cannot pass the reader's snapshot: the WAL keeps the burst.
        assert os.path.getsize(wal) > WAL_LIMIT_BYTES
    store.housekeeping.run()
    assert os.path.getsize(wal) <= WAL_LIMIT_BYTES


DAY_MS = 86_400_000


def shift_last_run(store, by_ms):
    """The last run's record as a process whose clock was ``by_ms`` ahead wrote it."""
    [[text]] = store.conn.execute(
        "SELECT value FROM sq_meta WHERE key = 'housekeeping_last_run'").fetchall()
    record = json.loads(text)
    record["started_ms"] += by_ms
    record["ended_ms"] += by_ms
    with store.write() as conn:
        conn.execute("UPDATE sq_meta SET value = ? WHERE key = 'housekeeping_last_run'",
                     (json.dumps(record),))


def test_a_run_recorded_while_the_clock_was_a_day_ahead_does_not_stop_housekeeping(store):
    from spark_queue.metrics import render
    from spark_queue.store.floor.housekeeping import run_housekeeping

    store.housekeeping.set_interval(1000)
    store.housekeeping.run()
    shift_last_run(store, DAY_MS)
    # The metric does not say a run happened tomorrow (the alert on it could never fire).
    [line] = [x for x in render(store).splitlines()
              if x.startswith("sqliteq_retention_last_run_timestamp_seconds{")]
    assert float(line.split()[-1]) <= now_ms() / 1000
    store.topic("t").configure(retention_rows=1)
    store.publish_many("t", range(100))
    assert run_housekeeping(store.file, due_only=True) is not None
    assert store.topic("t").bounds()[0] == 99
    assert store.housekeeping.status().last_run.started_ms <= now_ms()


def test_a_lease_written_while_the_clock_was_a_day_ahead_does_not_block_a_run(store):
    store.topic("t").configure(retention_rows=1)
    store.publish_many("t", range(5))
    with store.write() as conn:  # its holder died with the clock a day ahead
        conn.execute("INSERT OR REPLACE INTO sq_meta VALUES ('housekeeping_lease', ?)",
                     (json.dumps({"holder": "other", "until_ms": now_ms() + DAY_MS}),))
    assert store.housekeeping.run() is not None
    assert store.topic("t").bounds()[0] == 4


def test_one_bad_row_is_reported_and_skipped_and_the_run_goes_on(store):
    """Another SQLite client wrote a topic's retention and a queue's settings as text
    (the CHECK constraints let text through): the run skips those rows, names them in
    its record, and does the rest; check and metrics report them instead of failing."""
    from spark_queue.metrics import render

    for topic in ("a_bad", "b_good"):
        store.topic(topic).configure(retention_rows=1)
        store.publish_many(topic, range(5))
    bad_q = store.queue("a_bad_q", max_attempts=1)
    bad_q.enqueue_many(list(range(3)))
    for job in bad_q.claim(3):
        bad_q.nack(job, "boom")
    good_q = store.queue("b_good_q", max_attempts=1, dead_retention_rows=1)
    good_q.enqueue_many(list(range(3)))
    for job in good_q.claim(3):
        good_q.nack(job, "boom")
    with store.write() as conn:
        conn.execute("UPDATE sq_topics SET retention_rows = 'ten' WHERE name = 'a_bad'")
        conn.execute("UPDATE sq_queues SET dead_retention_ms = 'a week', "
                     "idempotency_window_ms = 'a day' WHERE name = 'a_bad_q'")
    run = store.housekeeping.run()
    assert run.complete
    assert store.topic("b_good").bounds()[0] == 4 and store.topic("a_bad").bounds()[0] == 0
    assert (run.deleted_events, run.deleted_dead_letters) == (4, 2)
    assert len(run.problems) == 3, run.problems
    assert any("'a_bad'" in p and "retention_rows" in p and "'ten'" in p for p in run.problems)
    assert any("'a_bad_q'" in p and "dead_retention_ms" in p for p in run.problems)
    assert any("'a_bad_q'" in p and "idempotency_window_ms" in p for p in run.problems)
    assert store.housekeeping.status().last_run == run
    report = store.check()
    assert not report.ok
    assert any("'a_bad'" in p and "retention_rows" in p for p in report.problems)
    assert any("'a_bad_q'" in p and "dead_retention_ms" in p for p in report.problems)
    # A limit given by hand replaces the broken one.
    assert store.topic("a_bad").prune(retention_rows=2)[0].deleted == 3
    text = render(store)
    assert "sqliteq_retention_last_run_problems{" in text
    [line] = [x for x in text.splitlines()
              if x.startswith("sqliteq_retention_last_run_problems{")]
    assert line.endswith(" 3")


def test_the_due_check_is_a_read_that_never_waits_for_a_writer(store):
    """Every process checks every 5 s whether a run is due: a BEGIN IMMEDIATE made each
    of them (a Spark source too) a writer waiting behind long writers."""
    from spark_queue.store.floor.housekeeping import run_housekeeping

    store.housekeeping.run()  # just ran: the next is due in 30 s
    with Store(store.path, busy_timeout_ms=50) as checker, Store(store.path) as writer:
        statements = []
        checker.conn.exec_trace = lambda cursor, sql, bindings: statements.append(sql) or True
        with writer.write():  # a long writer holds the lock throughout the check
            assert run_housekeeping(checker.file, due_only=True) is None
        assert not any("IMMEDIATE" in sql.upper() for sql in statements), statements


def test_dead_letter_retention_deletes_at_most_step_bytes_per_step(store):
    from spark_queue.store.queues import dead_retention

    q = store.queue("q", max_attempts=1)
    q.enqueue_many([b"x" * 2**20] * 12)
    for job in q.claim(12):
        q.nack(job, "boom")
    q.configure(dead_retention_rows=1)
    counts = []

    def may_step(conn):
        counts.append(conn.execute("SELECT count(*) FROM sq_dead_jobs").fetchall()[0][0])
        return True

    assert dead_retention.prune_dead_letters(store.file, at_ms=now_ms(), may_step=may_step) == 11
    per_step = [a - b for a, b in zip(counts, [*counts[1:], 1], strict=True)]
    # docs/operations.md: at most 8 MiB of payloads per step.
    assert max(per_step) <= 8 and sum(per_step) == 11, per_step


def test_dead_letter_retention_by_rows_keeps_the_newest_in_steps_of_step_rows(store):
    """The count of a queue's dead letters was read whole in every step (0.09 s a step at
    2,000,000, growing with the backlog); each step now reads the newest it keeps and at
    most a step's worth beyond them (issue #59)."""
    from spark_queue.store.file.steps import STEP_ROWS
    from spark_queue.store.queues import dead_retention

    q = store.queue("q", dead_retention_rows=1000)
    total = 2 * STEP_ROWS + 1500
    with store.write() as conn:
        [[qid]] = conn.execute("SELECT id FROM sq_queues WHERE name = 'q'").fetchall()
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "INSERT INTO sq_dead_jobs (id, queue_id, priority, attempts, enqueued_ms, dead_ms, "
            "value, value_type) SELECT i, ?, 0, 1, 0, i, 'x', 1 FROM n", (total, qid))
    steps = []

    def may_step(conn):
        steps.append(1)
        return True

    deleted = dead_retention.prune_dead_letters(store.file, at_ms=now_ms(), may_step=may_step)
    assert deleted == total - 1000 and len(steps) == 3
    assert [d.id for d in q.dead_letters()] == list(range(total - 999, total + 1))
