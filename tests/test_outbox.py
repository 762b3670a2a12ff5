"""One transaction with the caller's data, from three clients in another process: a reader
never sees an order without its event, its job and its consumer offset, nor the reverse, and
a rolled-back order leaves none of them (spark_queue/outbox.py, store.transaction())."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from spark_queue.errors import PayloadTooLargeError
from spark_queue.store import Store

CLIENT = str(pathlib.Path(__file__).with_name("outbox_client.py"))
ORDERS = 120


def visible(store: Store) -> tuple[int, int, int, int, int]:
    """Orders, events, jobs, the saved offset, and rolled-back orders, from one snapshot."""
    with store.snapshot():
        orders, declined = store.conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE id >= 100000) FROM orders").fetchall()[0]
        return (orders, store.topic("orders").latest_offset(), store.queue("emails").stats().ready,
                store.committed_offsets("billing").get("inputs", 0), declined)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["store", "sqlite3", "sqlalchemy"])
def test_a_reader_sees_each_order_with_its_event_job_and_offset_or_none_of_them(
        store_path, mode):
    with Store(store_path) as store:
        store.conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER)")
        store.topic("orders").create()
        store.queue("emails").configure()
        store.publish_many("inputs", range(ORDERS))
        client = subprocess.Popen([sys.executable, CLIENT, mode, store_path, str(ORDERS)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = set()
        while client.poll() is None:
            orders, events, jobs, offset, declined = visible(store)
            assert orders == events == jobs == offset and declined == 0
            seen.add(orders)
        out, err = client.communicate(timeout=120)
        assert client.returncode == 0, err
        assert visible(store) == (ORDERS, ORDERS, ORDERS, ORDERS, 0)
        assert len(seen) > 1  # the reader looked while the client wrote
        assert json.loads(out) == [[i, i + 1] for i in range(ORDERS)]  # offsets, job ids
        assert [e.value for e in store.read("orders")] == [{"id": i} for i in range(ORDERS)]
        assert store.check().ok


def test_the_outbox_helpers_import_only_the_standard_library():
    code = ("import sys; import spark_queue.outbox; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('apsw', 'sqlalchemy', 'pyarrow', 'pyspark', 'sqlite3', '_sqlite3')); "
            "sys.exit(f'loaded {bad}' if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_outbox_publish_meets_the_topics_payload_limit_as_store_publish_does(store_path):
    """The helper's JSON is Store.publish's, so the view counts the same bytes: at the limit
    accepted, one over refused with the view's message, the transaction kept (sqlite3 in a
    subprocess: never beside this process's apsw connections)."""
    at_limit, over = {"a": "é" * 4}, {"a": "é" * 4 + "x"}  # 16 and 17 bytes as JSON text
    with Store(store_path) as store:
        store.publish("limited", "first")
        store.topic("limited").configure(max_payload_bytes=16)
        with pytest.raises(PayloadTooLargeError):
            store.publish("limited", over)
    code = (
        "import json, sqlite3, sys; from spark_queue import outbox\n"
        "conn = sqlite3.connect(sys.argv[1], timeout=5)\n"
        "out = []\n"
        "with conn:\n"
        "    out.append(outbox.publish(conn, 'limited', json.loads(sys.argv[2])))\n"
        "    try:\n"
        "        outbox.publish(conn, 'limited', json.loads(sys.argv[3]))\n"
        "    except sqlite3.IntegrityError as error:\n"
        "        out.append(str(error))\n"
        "    out.append(outbox.publish(conn, 'limited', 'after'))\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run([sys.executable, "-c", code, store_path, json.dumps(at_limit),
                             json.dumps(over)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    first, refusal, after = json.loads(result.stdout)
    assert (first, after) == (1, 2)
    assert refusal.startswith("sq_publish: value is larger than its topic's max_payload_bytes")
    with Store(store_path) as store:
        assert [e.value for e in store.read("limited")] == ["first", at_limit, "after"]


def test_outbox_connections_never_checkpoint_a_replicated_store(store_path):
    """On a replicated store Litestream alone checkpoints (docs/replication.md, "Other
    clients' checkpoints"): ``outbox.connect`` sets ``wal_autocheckpoint = 0`` there and
    leaves SQLite's 1,000 elsewhere, and a connection opened before the store was marked
    stops checkpointing at its next ``publish`` or ``enqueue`` (sqlite3 in a subprocess)."""
    from spark_queue.store import ReplicaCycles

    with Store(store_path) as store:
        store.queue("emails").configure()
    code = (
        "import json, sqlite3, sys; from spark_queue import outbox\n"
        "def state(c): return [c.execute(f'PRAGMA {p}').fetchone()[0] for p in\n"
        "                      ('wal_autocheckpoint', 'foreign_keys', 'synchronous')]\n"
        "early = sqlite3.connect(sys.argv[1], timeout=5)\n"
        "before = outbox.connect(sys.argv[1])\n"
        "out = {'plain': state(before)}\n"
        "print('opened', flush=True); sys.stdin.readline()  # the store is marked now\n"
        "out['prepared'] = outbox.prepare(sqlite3.connect(sys.argv[1], timeout=5))\n"
        "marked = outbox.connect(sys.argv[1])\n"
        "out['marked'] = state(marked)\n"
        "with early:\n"
        "    out['early_before'] = state(early)\n"
        "    outbox.publish(early, 'orders', {'id': 1})\n"
        "    out['early_after_publish'] = state(early)\n"
        "with before:\n"
        "    outbox.enqueue(before, 'emails', {'id': 1})\n"
        "    out['before_after_enqueue'] = state(before)\n"
        "print(json.dumps(out))\n"
    )
    client = subprocess.Popen([sys.executable, "-c", code, store_path], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert client.stdout is not None and client.stdin is not None
    try:
        assert client.stdout.readline() == "opened\n"
        cycles = ReplicaCycles(store_path)
        cycles.mark("file:///replica")
        cycles.close()
        out, _ = client.communicate("go\n", timeout=60)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    assert client.returncode == 0
    assert json.loads(out) == {
        "plain": [1000, 1, 1], "prepared": True, "marked": [0, 1, 1],
        "early_before": [1000, 0, 2], "early_after_publish": [0, 0, 2],
        "before_after_enqueue": [0, 1, 1],
    }
