"""Looking never writes: the commands that only show a store (housekeeping without --run,
check, metrics) leave a store an older release wrote byte-identical (no migration that
would lock that release's processes out mid-upgrade), and check leaves no -wal/-shm
beside the file it looked at (a backup copy stays one file)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from spark_queue.cli import main
from spark_queue.store import Store

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "stores"
COMMANDS = {
    "housekeeping": ["housekeeping"],
    "housekeeping --json": ["housekeeping", "--json"],
    "check": ["check"],
    "metrics": ["metrics"],
}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def schema_7_store(tmp_path: Path) -> Path:
    folder = tmp_path / "old"
    folder.mkdir()
    path = folder / "store.sqlite"
    shutil.copyfile(FIXTURES / "v7.sqlite", path)
    assert int.from_bytes(path.read_bytes()[60:64], "big") == 7
    return path


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_read_only_command_leaves_a_schema_7_store_byte_identical(schema_7_store, command):
    before = digest(schema_7_store)
    main([*COMMANDS[command], str(schema_7_store)])  # refusing is fine; writing is not
    assert digest(schema_7_store) == before
    if command == "check":
        assert sorted(os.listdir(schema_7_store.parent)) == ["store.sqlite"]


def test_check_leaves_no_wal_or_shm_beside_a_copy(tmp_path):
    with Store(str(tmp_path / "live.sqlite"), create=True) as store:
        store.topic("t").create()
        store.publish("t", {"n": 1})
        copy = tmp_path / "copy"
        copy.mkdir()
        store.backup(str(copy / "store.sqlite"))
    before = digest(copy / "store.sqlite")
    assert main(["check", str(copy / "store.sqlite")]) == 0
    assert sorted(os.listdir(copy)) == ["store.sqlite"]
    assert digest(copy / "store.sqlite") == before


def test_housekeeping_status_shows_a_current_store_without_writing_it(tmp_path, capsys):
    path = tmp_path / "store.sqlite"
    Store(str(path), create=True).close()
    before = digest(path)
    assert main(["housekeeping", str(path)]) == 0
    assert digest(path) == before
    assert "interval" in capsys.readouterr().out


def test_housekeeping_prints_durations_and_utc_times_as_every_table(tmp_path, capsys):
    path = tmp_path / "store.sqlite"
    with Store(str(path), create=True) as store:
        store.topic("t").create()
        store.topic("t").configure(retention_rows=2)
        store.publish_many("t", range(10))
        store.commit_offsets("slow", {"t": 3})
    assert main(["housekeeping", str(path), "--interval", "30s", "--run"]) == 0
    out = capsys.readouterr().out
    lines = dict(line.split(None, 1) for line in out.splitlines()[:10] if line.strip())
    assert lines["interval"] == "30s"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", lines["last_run_utc"])
    assert re.fullmatch(r"\d+ms|\d+s", lines["last_run_took"])
    assert "held back by consumers:" in out
    table = out.split("held back by consumers:\n", 1)[1].splitlines()
    assert table[0].split() == ["topic", "consumer", "events", "held", "query", "query_saved"]
    assert table[1].split()[:3] == ["t", "slow", "5"]
    assert "{" not in out and "_ms" not in out  # no raw JSON, no raw milliseconds
    assert main(["housekeeping", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["interval_ms"] == 30_000  # scripts keep the raw milliseconds
    assert shown["held_back"][0]["consumer"] == "slow"
