"""What the machine does to a store: a full disk, a held lock, a damaged file."""

from __future__ import annotations

import json
import os
import time

import apsw
import pytest

from spark_queue.cli import main
from spark_queue.errors import CorruptStoreError, StoreBusyError, StoreFullError
from spark_queue.store import Store
from spark_queue.store.maintenance import check_file


def test_disk_full_rolls_back_the_whole_batch_and_recovers(store):
    store.publish_many("t", ["seed"] * 10)
    pages = store.conn.execute("PRAGMA page_count").fetchall()[0][0]
    store.conn.execute(f"PRAGMA max_page_count={pages + 20}")
    with pytest.raises(StoreFullError, match="disk holding the store is full"):
        store.publish_many("t", ["x" * 1000] * 10_000)
    assert store.topic("t").bounds() == (0, 10)
    assert store.check().ok
    store.conn.execute("PRAGMA max_page_count=4294967294")
    assert store.publish_many("t", ["x" * 1000] * 10_000) == range(10, 10_010)


def test_writer_waits_for_the_busy_timeout_then_names_the_lock(store_path):
    with Store(store_path) as holder, Store(store_path, busy_timeout_ms=300) as writer:
        holder.publish("t", "first")
        with holder.write():
            started = time.monotonic()
            with pytest.raises(StoreBusyError, match="locked by another writer"):
                writer.publish("t", "blocked")
            assert time.monotonic() - started >= 0.25
            # Readers are never blocked by a writer in WAL mode.
            assert writer.topic("t").bounds() == (0, 1)
        assert writer.publish("t", "after") == 1
        assert writer.check().ok


def _damage(path: str, page: int) -> None:
    with open(path, "r+b") as f:
        page_size = int.from_bytes(f.read(18)[16:18], "big")
        f.seek(page_size * page)
        f.write(os.urandom(page_size))


def _filled_store(path: str) -> None:
    with Store(path) as store:
        store.publish_many("t", ["x" * 200] * 20_000)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def test_truncated_file_is_detected_at_open_with_the_way_out(store_path):
    _filled_store(store_path)
    os.truncate(store_path, os.path.getsize(store_path) // 2)
    with pytest.raises(CorruptStoreError, match=r"damaged .*sqliteq check.*sqliteq backup"):
        Store(store_path).read("t")
    assert not check_file(store_path).ok


def test_damaged_page_is_reported_not_returned_silently(store_path, capsys):
    _filled_store(store_path)
    _damage(store_path, 200)
    with pytest.raises(CorruptStoreError, match="sqliteq check"), Store(store_path) as store:
        store.read_arrow("t")
    assert main(["check", store_path, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["problems"]


def test_check_of_a_non_database_reports_instead_of_crashing(store_path):
    with open(store_path, "wb") as f:
        f.write(b"garbage" * 1000)
    report = check_file(store_path)
    assert not report.ok and "not a database" in report.problems[0]


def test_sqlite_raw_errors_do_not_leak_from_store_methods(store_path):
    _filled_store(store_path)
    _damage(store_path, 100)
    with Store(store_path) as store:
        with pytest.raises(CorruptStoreError):
            store.read("t")
        with pytest.raises(CorruptStoreError):
            store.read_arrow("t")
    assert not issubclass(CorruptStoreError, apsw.Error)
