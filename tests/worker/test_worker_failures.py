"""A worker says what happened: each failure on one line, a summary in jobs, an unknown
queue named, a crashed thread stopping the worker with its leases released."""

from __future__ import annotations

import json
import logging
import re
import threading

import pytest

from spark_queue.cli import main
from spark_queue.errors import QueueConfigError, UnknownQueueError, WorkerCrashedError
from spark_queue.worker import MAX_LEASE_MS, MAX_WAIT_MS, Worker


def test_each_failure_is_one_line_with_job_id_exception_and_retry_or_dead_letter(
    store, store_path, caplog
):
    q = store.queue("q", max_attempts=2, backoff_base_ms=1000, backoff_cap_ms=1000)
    bad = q.enqueue("bad")
    good = q.enqueue("good")

    def handler(job):
        if job.payload == "bad":
            raise KeyError("img")

    with caplog.at_level(logging.WARNING, logger="spark_queue.worker"):
        stats = Worker(store_path, "q", handler, until_empty=True).run()
    lines = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert len(lines) == 2 and all("\n" not in line for line in lines)
    assert re.fullmatch(
        rf"job {bad} of queue 'q' failed \(attempt 1\): KeyError: 'img'; "
        r"retry in (\d+ms|1s)",  # the units flags and tables use
        lines[0],
    ), lines[0]
    assert lines[1] == f"job {bad} of queue 'q' failed (attempt 2): KeyError: 'img'; dead-lettered"
    assert (stats.acked, stats.retried, stats.dead_lettered, stats.failed) == (1, 1, 1, 2)
    assert list(stats.as_dict())[:3] == ["acked", "retried", "dead_lettered"]
    assert [d.id for d in q.dead_letters()] == [bad] and good != bad


def test_an_unknown_queue_is_an_error_listing_the_queues_unless_asked_to_create_it(
    store, store_path
):
    store.queue("emails").enqueue("x")
    with pytest.raises(UnknownQueueError) as raised:
        Worker(store_path, "emials", print, until_empty=True).run()
    message = str(raised.value)
    assert "queue 'emials' does not exist" in message and "'emails'" in message
    assert "--create" in message
    assert [c.name for c in store.queues()] == ["emails"]  # nothing was created
    stats = Worker(store_path, "new", print, until_empty=True, create_queue=True).run()
    assert stats.acked == 0 and [c.name for c in store.queues()] == ["emails", "new"]


def test_a_crashed_slot_stops_the_worker_releases_its_leases_and_raises(
    store, store_path, monkeypatch
):
    q = store.queue("q")
    ids = q.enqueue_many(["a", "b", "c"])

    def broken(self, *args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(type(q), "ack_and_claim", broken)
    monkeypatch.setattr(type(q), "ack_many", broken)
    worker = Worker(store_path, "q", lambda job: None, batch_size=3)
    with pytest.raises(WorkerCrashedError) as raised:
        worker.run()  # no until_empty: without the crash this would run forever
    message = str(raised.value)
    assert "worker slot 0 crashed with RuntimeError: disk on fire" in message
    assert "3 leased jobs were released" in message
    assert raised.value.stats.released == 3 and raised.value.stats.acked == 0
    stats = q.stats()
    assert (stats.ready, stats.leased) == (3, 0)  # ready now, not after the lease expires
    assert sorted(j.id for j in q.peek(10)) == ids


def test_a_crashed_heartbeat_stops_the_worker_and_gives_back_unstarted_jobs(
    store, store_path, monkeypatch
):
    q = store.queue("q")
    first, second = q.enqueue_many(["first", "second"])
    stopped = threading.Event()

    def broken_extend(self, *args, **kwargs):
        raise RuntimeError("heartbeat lost its connection")

    monkeypatch.setattr(type(q), "extend", broken_extend)

    def handler(job):
        # The first job runs until the crash has stopped the worker, so the slot
        # provably sees the stop before it could start the second job.
        assert stopped.wait(30)

    worker = Worker(store_path, "q", handler, batch_size=2, heartbeat_ms=5)
    stop = worker.stop

    def stop_and_tell():
        stop()
        stopped.set()

    worker.stop = stop_and_tell
    with pytest.raises(WorkerCrashedError, match="the heartbeat thread crashed with "
                       "RuntimeError: heartbeat lost its connection") as raised:
        worker.run()
    assert raised.value.stats.acked == 1 and raised.value.stats.released == 1
    [left] = q.peek(10)
    assert (left.id, left.state, left.attempts) == (second, "ready", 0)
    assert first != second


@pytest.mark.parametrize(
    ("setting", "value"),
    [("lease_ms", MAX_LEASE_MS + 1), ("heartbeat_ms", MAX_WAIT_MS + 1),
     ("grace_ms", MAX_WAIT_MS + 1), ("idle_poll_max_ms", 10**30), ("batch_size", 2**63)],
)
def test_values_sqlite_or_a_thread_cannot_hold_are_refused_when_given(
    store_path, setting, value
):
    with pytest.raises(QueueConfigError, match=f"worker {setting} must be an integer"):
        Worker(store_path, "q", print, **{setting: value})


def test_a_queue_with_the_longest_visibility_timeout_still_works(store, store_path):
    # The heartbeat interval (a third of the lease) is beyond what a thread can wait.
    q = store.queue("q", visibility_timeout_ms=2**62 - 1)
    q.enqueue("x")
    assert Worker(store_path, "q", lambda job: None, until_empty=True).run().acked == 1


def test_the_worker_command_exits_1_after_a_crash_with_the_summary_and_one_error_line(
    capsys, store, store_path, monkeypatch, tmp_path
):
    q = store.queue("q")
    q.enqueue_many(["a", "b"])

    def broken(self, *args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(type(q), "ack_and_claim", broken)
    monkeypatch.setattr(type(q), "ack_many", broken)
    code = main(["worker", store_path, "json:dumps", "--queue", "q", "--batch-size", "2",
                 "--json"])
    out, err = capsys.readouterr()
    assert code == 1
    assert json.loads(out) | {"released": 2} == json.loads(out)
    last = err.strip().splitlines()[-1]
    assert last.startswith("sqliteq worker: worker on queue 'q' stopped: worker slot 0 crashed")
    assert q.stats().ready == 2


def test_the_worker_command_refuses_an_unknown_queue_unless_create(capsys, store, store_path):
    store.queue("emails").enqueue("x")
    code = main(["worker", store_path, "json:dumps", "--queue", "emials", "--until-empty"])
    _, err = capsys.readouterr()
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("sqliteq worker: queue 'emials' does not exist") and "'emails'" in err
    code = main(["worker", store_path, "json:dumps", "--queue", "new", "--create",
                 "--until-empty", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["acked"] == 0


@pytest.mark.parametrize("value", [0, True, 1.5])
def test_a_workers_lease_is_refused_as_the_queue_setting_it_overrides(store, store_path, value):
    with pytest.raises(QueueConfigError) as setting:
        store.queue("q").configure(visibility_timeout_ms=value)
    with pytest.raises(QueueConfigError) as override:
        Worker(store_path, "q", print, visibility_timeout_ms=value)
    allowed = str(setting.value).split(" must be ")[1]
    assert str(override.value) == f"worker visibility_timeout_ms must be {allowed}"
