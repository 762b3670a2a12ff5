"""A worker survives anything a handler does: every BaseException fails the job with its real
error and the worker goes on; an unstorable message is stored escaped; a handler still
running at shutdown is nacked saying so; a store the worker cannot write is refused before
it starts. (The same in real processes: tests/worker/test_worker_processes_faults.py.)"""

from __future__ import annotations

import asyncio
import builtins
import json
import logging
import threading

import pytest

from spark_queue.cli import main
from spark_queue.errors import ReadOnlyStoreError
from spark_queue.store import Store
from spark_queue.worker import Worker, run_task
from spark_queue.worker.task import MAX_ERROR_CHARS, one_line, storable


class OwnBaseError(BaseException):
    """A handler's own BaseException subclass (as gevent's Timeout is)."""


# Every builtin BaseException that is not an Exception, plus the library ones handlers meet.
BASE_EXCEPTIONS = sorted(
    (c for c in vars(builtins).values()
     if isinstance(c, type) and issubclass(c, BaseException) and not issubclass(c, Exception)),
    key=lambda c: c.__name__,
) + [asyncio.CancelledError, OwnBaseError]


def raise_(exc: BaseException):
    def handler(job):
        if job.payload == "bad":
            raise exc
    return handler


def instance(cls: type[BaseException]) -> BaseException:
    if issubclass(cls, BaseExceptionGroup):
        return cls("group of 1", [KeyboardInterrupt()])
    return cls(f"raised by {cls.__name__}") if cls is not SystemExit else cls(3)


@pytest.mark.parametrize("cls", BASE_EXCEPTIONS, ids=lambda c: c.__name__)
def test_every_base_exception_from_a_handler_fails_its_job_with_its_real_error_and_the_worker_goes_on(  # noqa: E501
    store, store_path, cls, caplog
):
    q = store.queue("q", max_attempts=1)
    bad, good = q.enqueue_many(["bad", "good"])
    with caplog.at_level(logging.WARNING, logger="spark_queue.worker"):
        stats = Worker(store_path, "q", raise_(instance(cls)), until_empty=True).run()
    assert (stats.acked, stats.dead_lettered, stats.failed) == (1, 1, 1)
    [dead] = q.dead_letters()
    assert dead.id == bad and f"{cls.__name__}: " in dead.last_error
    assert "Traceback" in dead.last_error
    assert q.stats()[1:] == (0, 0, 0, 1, None) and good != bad
    [line] = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert f"job {bad} of queue 'q' failed (attempt 1): " in line and cls.__name__ in line


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str for you")


class InterruptingStrError(Exception):
    def __str__(self) -> str:
        raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("exc", "stored", "logged"),
    [
        (ValueError("bad \udc80 byte"), "ValueError: bad \\udc80 byte", None),
        (ValueError("nul \x00 inside"), "ValueError: nul \x00 inside", None),
        (ValueError("two\nlines"), "ValueError: two\nlines", "ValueError: two\\nlines"),
        (UnprintableError(), "UnprintableError", None),
        (InterruptingStrError(), "InterruptingStrError", None),
    ],
    ids=["lone-surrogate", "nul", "newline", "str-raises", "str-raises-base-exception"],
)
def test_an_unstorable_or_unprintable_message_is_stored_escaped_as_the_jobs_real_error(
    store, store_path, exc, stored, logged, caplog
):
    q = store.queue("q", max_attempts=1)
    bad = q.enqueue("bad")
    with caplog.at_level(logging.WARNING, logger="spark_queue.worker"):
        stats = Worker(store_path, "q", raise_(exc), until_empty=True).run()
    assert stats.dead_lettered == 1
    [dead] = q.dead_letters()
    assert dead.id == bad and stored in dead.last_error
    [line] = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert "\n" not in line and (logged or stored) in line


def test_a_huge_message_keeps_its_head_and_the_tail_where_the_exception_is():
    text = storable("Traceback\n" + "x" * (3 * MAX_ERROR_CHARS) + "\nValueError: end")
    assert len(text) < MAX_ERROR_CHARS + 100
    assert text.startswith("Traceback\n") and text.endswith("\nValueError: end")
    assert "characters cut" in text


def test_run_task_returns_none_for_a_return_and_the_failure_for_any_raise():
    assert run_task(lambda job: 42, None) is None
    failure = run_task(raise_(SystemExit(3)), type("J", (), {"payload": "bad"})())
    assert failure is not None and failure.line == "SystemExit: 3"
    assert failure.error.startswith("Traceback") and one_line(KeyboardInterrupt()) == (
        "KeyboardInterrupt")


def test_a_handler_still_running_when_the_grace_period_ends_is_nacked_saying_so(
    store, store_path
):
    q = store.queue("q", max_attempts=2)
    job_id = q.enqueue("hang")
    started, release = threading.Event(), threading.Event()

    def hang(job):
        started.set()
        release.wait(60)

    try:
        for attempt in (1, 2):
            started.clear()
            worker = Worker(store_path, "q", hang, grace_ms=50, visibility_timeout_ms=100,
                            heartbeat_ms=10)
            threading.Thread(target=lambda w=worker: (started.wait(60), w.stop())).start()
            stats = worker.run()
            assert (stats.interrupted, stats.acked, stats.released) == (1, 0, 0)
            if attempt == 1:
                info = q.get(job_id)
                assert (info.state, info.attempts) == ("ready", 1)  # at once, no backoff
                assert stats.retried == 1
        [dead] = q.dead_letters()  # the second hang used the last attempt
        assert dead.id == job_id and stats.dead_lettered == 1
        assert "the handler was still running when the worker stopped (the grace period of " \
            "50ms ended" in dead.last_error
    finally:
        release.set()


def read_only(path):
    # Root ignores file modes: open the store read-only as SQLite does a read-only file.
    return Store(path, readonly=True)


def test_a_worker_on_a_store_it_cannot_write_refuses_before_it_starts(
    store, store_path, monkeypatch
):
    q = store.queue("q")
    q.enqueue("x")
    monkeypatch.setattr(Worker, "_open_store", lambda self: read_only(self.path))
    handled = []
    with pytest.raises(ReadOnlyStoreError, match="worker on queue 'q' cannot start: store "):
        Worker(store_path, "q", handled.append, until_empty=True).run()
    assert handled == [] and q.stats().ready == 1 and q.peek(1)[0].attempts == 0


def test_the_worker_command_on_a_read_only_store_exits_1_with_one_line_and_no_summary(
    capsys, store, store_path, monkeypatch
):
    store.queue("q").enqueue("x")
    monkeypatch.setattr(Worker, "_open_store", lambda self: read_only(self.path))
    code = main(["worker", store_path, "json:dumps", "--queue", "q", "--until-empty"])
    out, err = capsys.readouterr()
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("sqliteq worker: worker on queue 'q' cannot start")
    assert store.queue("q").stats().ready == 1


def test_the_worker_command_exits_3_when_the_grace_period_ends_with_jobs_running(
    capsys, store, store_path, monkeypatch
):
    store.queue("q").enqueue("x")
    started = threading.Event()
    release = threading.Event()

    def hang(job):
        started.set()
        release.wait(60)

    original_run = Worker.run

    def run_and_stop(self):
        threading.Thread(target=lambda: (started.wait(60), self.stop())).start()
        return original_run(self)

    monkeypatch.setattr("spark_queue.worker.load_handler", lambda spec: hang)
    monkeypatch.setattr(Worker, "run", run_and_stop)
    try:
        code = main(["worker", store_path, "x:y", "--queue", "q", "--grace-ms", "10ms",
                     "--json"])
    finally:
        release.set()
    out, _ = capsys.readouterr()
    assert code == 3 and json.loads(out)["interrupted"] == 1
    assert store.queue("q").stats().ready == 1

