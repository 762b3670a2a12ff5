"""Several writer processes, and a writer killed mid-transaction."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from spark_queue.store import Store

WRITER = textwrap.dedent(
    """
    import sys
    from spark_queue.store import Store
    path, writer, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sent = 0
    with Store(path, busy_timeout_ms=60_000) as store:
        while sent < total:
            # Mix single publishes and batches of varying size.
            size = 1 if sent % 3 == 0 else min(1 + sent % 97, total - sent)
            store.publish_many("t", [{"w": writer, "seq": sent + i} for i in range(size)])
            sent += size
    """
)


@pytest.mark.slow
def test_offsets_stay_dense_under_concurrent_writer_processes(store_path):
    Store(store_path).close()
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, store_path, str(w), "5000"])
        for w in range(4)
    ]
    for proc in procs:
        assert proc.wait(timeout=300) == 0
    with Store(store_path) as store:
        events = store.read("t")
        assert store.check().ok
    assert [e.offset for e in events] == list(range(20_000))
    for w in range(4):
        assert [e.value["seq"] for e in events if e.value["w"] == w] == list(range(5000))


KILLED_WRITER = textwrap.dedent(
    """
    import sys
    from spark_queue.store import Store
    def values():
        for i in range(100_000):
            if i == 50_000:
                print("halfway", flush=True)
            yield "x" * 100
    with Store(sys.argv[1], durability="full") as store:
        store.publish("t", "before")
        store.publish_many("t", values())
        print("done", flush=True)
    """
)


@pytest.mark.slow
def test_sigkill_mid_publish_leaves_all_or_none_of_the_batch(store_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, store_path], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "halfway"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    with Store(store_path, create=False) as store:
        assert store.check().ok
        assert store.topic("t").bounds() == (0, 1)
        assert [e.value for e in store.read("t")] == ["before"]
        # The next publish continues densely after the rolled-back batch.
        assert store.publish("t", "after") == 1


@pytest.mark.slow
def test_sigkill_after_commit_keeps_the_whole_batch(store_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, store_path], stdout=subprocess.PIPE, text=True
    )
    for line in proc.stdout:
        if line.strip() == "done":
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    with Store(store_path, create=False) as store:
        assert store.check().ok
        assert store.topic("t").bounds() == (0, 100_001)


def test_waiting_writer_gets_in_after_lock_holder_commits(store_path):
    with Store(store_path) as holder, Store(store_path, busy_timeout_ms=10_000) as waiter:
        holder.topic("t").create()
        with holder.write():
            holder.conn.execute("UPDATE sq_topics SET created_ms = created_ms")
            proc = subprocess.Popen(
                [sys.executable, "-c",
                 "import sys; from spark_queue.store import Store; "
                 "print(Store(sys.argv[1], busy_timeout_ms=10000).publish('t', 'w'))",
                 store_path],
                stdout=subprocess.PIPE, text=True,
            )
            time.sleep(0.3)
            assert proc.poll() is None
        assert proc.communicate(timeout=30)[0].strip() == "0"
        assert waiter.topic("t").latest_offset() == 1
