"""Progress for a person watching: on stderr, only on a terminal, never with --json."""

from __future__ import annotations

import io
import sys

from spark_queue.cli import main, progress
from spark_queue.store import NewJob, QueueStats, Store


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_goes_only_to_a_terminal_and_never_with_json(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress.watching(as_json=False) is None
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert progress.watching(as_json=True) is None
    assert progress.watching(as_json=False) is terminal


def stats(delayed: int, leased: int = 0) -> QueueStats:
    return QueueStats("q", 0, leased, delayed, 0, None)


def test_until_empty_wait_is_reported_once_per_change_of_delayed_jobs():
    stream = io.StringIO()
    wait = progress.DelayedJobsWait(stream, "q")
    for s in (stats(0, leased=2), stats(3), stats(3, leased=1), stats(2), stats(0), stats(1)):
        wait(s)
    assert stream.getvalue().splitlines() == [
        "sqliteq worker: --until-empty waits for 3 delayed job(s) of queue 'q' to come due "
        "(0 leased now)",
        "sqliteq worker: --until-empty waits for 2 delayed job(s) of queue 'q' to come due "
        "(0 leased now)",
        "sqliteq worker: --until-empty waits for 1 delayed job(s) of queue 'q' to come due "
        "(0 leased now)",
    ]


def test_worker_until_empty_says_on_a_terminal_that_it_waits_for_delayed_jobs(
    capsys, store_path, tmp_path, monkeypatch
):
    (tmp_path / "progress_handlers.py").write_text("def handle(job):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with Store(store_path) as store:
        [job_id] = store.queue("q").enqueue_many([NewJob("later", delay_ms=3_600_000)])

    class WatchingTerminal(Terminal):
        # The person watching gives up on the delayed job once told about it: the
        # worker can only exit after the line was written (no race, no timing).
        def write(self, text: str) -> int:
            if "waits for 1 delayed job(s) of queue 'q'" in text:
                with Store(store_path) as store:
                    store.queue("q").remove(job_id)
            return super().write(text)

    terminal = WatchingTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main(["worker", store_path, "progress_handlers:handle", "--queue", "q",
                 "--until-empty", "--idle-poll-max-ms", "20"])
    assert code == 0
    assert terminal.getvalue().count("--until-empty waits for 1 delayed job(s)") == 1
    assert "acked" in capsys.readouterr().out
