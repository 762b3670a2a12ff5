"""One replicator per store, ready only once the store is marked, and one that gives up
says so in the store (issue 58, points 4, 5 and 7)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from spark_queue.errors import (
    ReplicationError,
    ReplicationTimeoutError,
    ReplicatorRunningError,
)
from spark_queue.replication import Replicator, start_replication
from spark_queue.store import Store, check_file, replication_warnings, replicator_running
from spark_queue.store.file.replica_mark import ReplicaWait

pytestmark = pytest.mark.slow


def _wait_for(condition, what: str, proc: subprocess.Popen | None = None,
              timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert proc is None or proc.poll() is None, f"{what}: {proc.args} exited"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_a_store_opened_right_after_start_replication_leaves_the_wal_to_litestream(tmp_path):
    store = str(tmp_path / "s.sqlite")
    replicating = start_replication(store, f"file://{tmp_path}/replica", sync_interval_ms=100)
    try:
        with Store(store) as opened_next:
            assert opened_next.conn.execute("PRAGMA wal_autocheckpoint").fetchall()[0][0] == 0
    finally:
        replicating.stop()
    assert "stopped replicating" in replicating.summary()


def test_a_second_replicator_is_refused_and_one_takes_over_from_a_killed_one(tmp_path):
    store = str(tmp_path / "s.sqlite")
    url = f"file://{tmp_path}/replica"
    log = tmp_path / "first.log"
    with open(log, "w") as sink:
        first = subprocess.Popen([sys.executable, "-m", "spark_queue", "replicate", store,
                                  "--to", url], stderr=sink, stdout=sink)
    try:
        _wait_for(lambda: "replicating" in log.read_text(), "the first replicator", first)
        assert replicator_running(store)
        with pytest.raises(ReplicatorRunningError) as refused:
            start_replication(store, url)
        said = str(refused.value)
        assert f"process {first.pid} on host {socket.gethostname()!r} since 20" in said
        second = subprocess.run([sys.executable, "-m", "spark_queue", "replicate", store,
                                 "--to", url], capture_output=True, text=True, timeout=60)
        assert second.returncode != 0 and f"process {first.pid}" in second.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # Its Litestream gets SIGTERM as its parent dies and holds the lock until it exits;
    # the next replicator waits for that, then takes over.
    replicating = start_replication(store, url, sync_interval_ms=100)
    try:
        with Store(store, durability="replicated") as s:
            s.publish("t", "after the takeover")
    finally:
        replicating.stop()
    assert not replicator_running(store)


def test_a_replicator_that_gives_up_on_a_busy_store_leaves_that_in_the_store(
        tmp_path, fake_litestream):
    store = str(tmp_path / "s.sqlite")
    replicator = Replicator(store, f"file://{tmp_path}/replica",
                            litestream_path=fake_litestream(busy=10**6))
    replicator.busy_retry_s = 0.3
    with pytest.raises(ReplicationError, match="database is locked.*given up after 0.3 s"):
        replicator.run(threading.Event())
    warnings = check_file(store).warnings
    assert any(w.startswith("replicator gave up at 20") and "SQLITE_BUSY" in w
               and f"process {os.getpid()}" in w for w in warnings), warnings
    assert any("no replicator is running" in w for w in warnings)
    assert replication_warnings(store) == list(warnings[-2:])
    shown = subprocess.run([sys.executable, "-m", "spark_queue", "topics", store],
                           capture_output=True, text=True, timeout=60)
    assert "replicator gave up at" in shown.stderr and "no replicator is running" in shown.stderr
    with Store(store) as writer:  # a replicated writer's timeout says it too
        writer.file.after_commit = ReplicaWait(writer.file, timeout_ms=20)
        with pytest.raises(ReplicationTimeoutError, match="The last replicator gave up at"):
            writer.publish("t", 1)


def test_a_sync_that_meets_a_busy_store_is_tried_again(tmp_path, fake_litestream):
    store = str(tmp_path / "s.sqlite")
    replicator = Replicator(store, f"file://{tmp_path}/replica",
                            litestream_path=fake_litestream(busy=3))
    stop = threading.Event()
    stop.set()  # one first cycle (which meets the busy store three times), then the last
    replicator.run(stop)
    assert replicator.cycles_done == 2
    assert not any("gave up" in w for w in replication_warnings(store))
