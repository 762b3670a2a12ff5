"""Backups: complete under continuous writes, consistent, never half a file, progress on a TTY."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap

import pytest

from spark_queue.cli import main, progress
from spark_queue.errors import StoreError
from spark_queue.store import Store
from spark_queue.store.maintenance import check_file

# Commits one event every 20 ms until the stop file appears: it is still
# publishing when the backup starts and when it returns, however fast the machine.
PUBLISHER = textwrap.dedent(
    """
    import os, sys, time
    from spark_queue.store import Store
    path, stop = sys.argv[1], sys.argv[2]
    with Store(path, busy_timeout_ms=60_000) as store:
        while True:
            offset = store.publish("busy", "x" * 2000)
            if offset == 0:
                print("publishing", flush=True)
            if os.path.exists(stop):
                break
            time.sleep(0.02)
    print(offset + 1, flush=True)
    """
)


def _fill(path: str, megabytes: int) -> None:
    with Store(path) as store:
        for _ in range(megabytes):
            store.publish_many("bulk", ["y" * 1000] * 1000)


@pytest.mark.slow
def test_backup_of_a_40mb_store_finishes_under_a_publisher_and_the_copy_passes_check(
    store_path, tmp_path, capsys,
):
    _fill(store_path, 40)
    stop = str(tmp_path / "stop")
    publisher = subprocess.Popen(
        [sys.executable, "-c", PUBLISHER, store_path, stop], stdout=subprocess.PIPE, text=True
    )
    try:
        assert publisher.stdout.readline().strip() == "publishing"
        dest = str(tmp_path / "copy.sqlite")
        assert main(["backup", store_path, dest, "--json"]) == 0
        assert publisher.poll() is None  # the publisher ran for the whole backup
    finally:
        open(stop, "w").close()
    published = int(publisher.communicate(timeout=120)[0].strip())
    assert publisher.returncode == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["pages"] > 40 * 1024 * 1024 // 4096 and err == ""
    report = check_file(dest)
    assert (report.ok, report.problems, report.warnings) == (True, [], ())
    with Store(dest, create=False) as copy:
        assert copy.topic("bulk").bounds() == (0, 40_000)
        earliest, latest = copy.topic("busy").bounds()
        assert earliest == 0 and 1 <= latest <= published
        assert [e.offset for e in copy.read("busy")] == list(range(latest))


def test_backup_reports_progress_per_step_and_leaves_no_partial_file(store_path, tmp_path):
    _fill(store_path, 6)
    calls = []
    dest = str(tmp_path / "copy.sqlite")
    with Store(store_path) as store:
        pages = store.backup(dest, lambda copied, total: calls.append((copied, total)))
    assert len(calls) >= 2 and calls[-1] == (pages, pages)
    assert [c for c, _ in calls] == sorted(c for c, _ in calls)
    assert sorted(os.listdir(tmp_path)) == ["copy.sqlite", "store.sqlite"]


def test_cli_backup_shows_progress_only_on_a_terminal(store_path, tmp_path, monkeypatch, capsys):
    _fill(store_path, 6)

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(progress.BackupProgressPrinter, "MIN_PAGES", 1)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["backup", store_path, str(tmp_path / "a.sqlite")]) == 0
    assert "\rsqliteq backup: 100% (" in terminal.getvalue()
    assert terminal.getvalue().endswith(" MiB)\n")
    quiet = Terminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    assert main(["backup", store_path, str(tmp_path / "b.sqlite"), "--json"]) == 0
    assert quiet.getvalue() == ""
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["backup"].endswith("b.sqlite")


def test_backup_never_overwrites_and_never_leaves_half_a_copy(store_path, tmp_path):
    dest = tmp_path / "taken.sqlite"
    dest.write_bytes(b"keep me")
    with Store(store_path) as store:
        store.publish("t", 1)
        with pytest.raises(StoreError, match="already exists"):
            store.backup(str(dest))
        with pytest.raises(StoreError, match="cannot create backup"):
            store.backup(str(tmp_path / "no" / "such" / "dir.sqlite"))
    assert dest.read_bytes() == b"keep me"
    assert not [name for name in os.listdir(tmp_path) if "partial" in name]
