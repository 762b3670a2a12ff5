"""One transaction with the caller's data, from three clients in another process: a reader
never sees an order without its event, its job and its consumer offset, nor the reverse, and
a rolled-back order leaves none of them (spark_queue/outbox.py, store.transaction())."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

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
