"""A restore is private from its first byte, and says what it brought back, which readers
see at once (issue 58, points 9 and 12)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from spark_queue.replication import restore
from spark_queue.store import Store
from tests.replication.machine import lose_machine


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _readable_by_others(root) -> list[str]:
    """Every path under ``root`` that a user other than its owner may read or enter: its
    mode and those of its folders up to ``root`` say so."""
    found = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            chain, reachable = path, True
            while chain != str(root):  # each folder on the way must let others in
                chain = os.path.dirname(chain)
                if chain != str(root) and not os.stat(chain).st_mode & stat.S_IXOTH:
                    reachable = False
            if reachable and os.stat(path).st_mode & (stat.S_IROTH | stat.S_IRGRP):
                found.append(path)
    return found


def _source_store(tmp_path) -> str:
    source = str(tmp_path / "source" / "s.sqlite")
    os.makedirs(os.path.dirname(source))
    with Store(source) as s:
        s.publish_many("t", list(range(10)))
    return source


def test_a_restore_writes_its_file_0600_from_the_first_byte(
        tmp_path, monkeypatch, fake_litestream, umask_022):
    monkeypatch.setenv("FAKE_RESTORE_FROM", _source_store(tmp_path))
    monkeypatch.setenv("FAKE_RESTORE_SEEN", str(tmp_path / "seen.json"))
    machine = tmp_path / "machine"
    machine.mkdir()
    store = str(machine / "app.sqlite")
    assert restore(store, f"file://{tmp_path}/replica", litestream_path=fake_litestream())
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen == {"tmp": 0o600, "dir": 0o700}, seen  # as Litestream wrote its first bytes
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o600
    assert _readable_by_others(machine) == []
    with Store(store) as s:
        assert [e.value for e in s.read("t", 0)] == list(range(10))


def test_an_interrupted_restore_leaves_nothing_readable_by_others(
        tmp_path, fake_litestream, umask_022):
    machine = tmp_path / "machine"
    machine.mkdir()
    env = {**os.environ, "FAKE_RESTORE_FROM": _source_store(tmp_path),
           "FAKE_RESTORE_SEEN": str(tmp_path / "seen.json"), "FAKE_RESTORE_HANG": "1"}
    restoring = subprocess.Popen(
        [sys.executable, "-m", "spark_queue", "restore", str(machine / "app.sqlite"),
         "--from", f"file://{tmp_path}/replica", "--litestream", fake_litestream()],
        env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "seen.json").exists():  # half the file written
            assert restoring.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        os.killpg(restoring.pid, signal.SIGKILL)
        restoring.wait()
    left = [os.path.relpath(os.path.join(d, f), machine)
            for d, _, files in os.walk(machine) for f in files]
    assert left and all(".app.sqlite-restore-" in path for path in left), left
    assert _readable_by_others(machine) == []


WRITER = """
import sys
from spark_queue import Store
with Store(sys.argv[1], durability="replicated") as s:
    for batch in range(20):
        s.publish_many("orders", [{"batch": batch, "n": n} for n in range(10)])
        print(batch, flush=True)
"""


def _sqliteq(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spark_queue", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def _events_in_file(path: str) -> int:
    import apsw

    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute("SELECT count(*) FROM sq_events").fetchall()[0][0])
    finally:
        conn.close()


@pytest.mark.slow
def test_right_after_a_restore_readers_see_every_restored_event(tmp_path):
    machine = tmp_path / "machine"
    machine.mkdir()
    store, url = str(machine / "app.sqlite"), f"file://{tmp_path}/replica"
    log = tmp_path / "replicate.log"
    with open(log, "w") as sink:
        replicator = subprocess.Popen(
            [sys.executable, "-m", "spark_queue", "replicate", store, "--to", url,
             "--sync-interval", "10s"], stdout=sink, stderr=sink, start_new_session=True)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, store], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while "replicating" not in log.read_text():
            assert replicator.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        acked = [line for line in writer.stdout]  # every batch acknowledged by the replica
        assert len(acked) == 20
    finally:
        lose_machine([writer, replicator])  # SIGKILL, Litestream with them
    for name in os.listdir(machine):  # the machine's disk is gone
        path = machine / name
        subprocess.run(["rm", "-rf", str(path)], check=True)
    done = _sqliteq("restore", store, "--from", url)
    assert done.returncode == 0, done.stderr
    restored = _events_in_file(store)
    assert restored >= 200
    assert f"1 topics, {restored} events (orders 0..{restored - 1})" in done.stderr
    assert "the replica as of 20" in done.stderr
    topics = _sqliteq("topics", store, "--json")
    assert json.loads(topics.stdout)[0]["latest"] == restored
    assert "no replicator is running" in topics.stderr
    tail = _sqliteq("tail", store, "orders", "--values")
    assert len(tail.stdout.splitlines()) == restored
    assert "no replicator is running" in tail.stderr
    published = _sqliteq("publish", store, "orders", '{"late": 1}')
    assert published.returncode == 0 and "no replicator is running" in published.stderr
    checked = _sqliteq("check", store)
    assert checked.returncode == 0 and "no replicator is running" in checked.stdout
    with open(log, "w") as sink:
        again = subprocess.Popen([sys.executable, "-m", "spark_queue", "replicate", store,
                                  "--to", url], stdout=sink, stderr=sink)
    deadline = time.monotonic() + 60
    while "replicating" not in log.read_text():
        assert again.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    again.send_signal(signal.SIGTERM)
    assert again.wait(60) == 0
    said = log.read_text()
    assert "stopped replicating" in said and "the replica holds every event" in said, said
    assert json.loads(_sqliteq("topics", store, "--json").stdout)[0]["latest"] == restored + 1
