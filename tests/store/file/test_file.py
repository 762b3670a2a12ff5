"""Opening store files: creation, pragmas, versions, foreign files, backups."""

from __future__ import annotations

import os
import stat

import apsw
import pytest

from spark_queue.errors import (
    NotAStoreError,
    ReadOnlyStoreError,
    SchemaVersionError,
    StoreError,
    StoreNotFoundError,
)
from spark_queue.store import Store
from spark_queue.store.file.schema import latest_version


def test_new_store_uses_wal_foreign_keys_and_durability(store_path):
    with Store(store_path, durability="full", busy_timeout_ms=1234) as store:
        pragma = lambda name: store.conn.execute(f"PRAGMA {name}").fetchall()[0][0]  # noqa: E731
        assert pragma("journal_mode") == "wal"
        assert pragma("foreign_keys") == 1
        assert pragma("synchronous") == 2
        assert pragma("busy_timeout") == 1234
        assert pragma("user_version") == latest_version()


def test_new_store_file_is_private_to_its_owner(store_path):
    Store(store_path).close()
    assert stat.S_IMODE(os.stat(store_path).st_mode) == 0o600


def test_missing_file_without_create_fails_with_the_fix(store_path):
    with pytest.raises(StoreNotFoundError, match="does not exist; create it with `sqliteq init"):
        Store(store_path, create=False)
    assert not os.path.exists(store_path)


def test_unknown_durability_names_the_allowed_levels(store_path):
    with pytest.raises(StoreError, match="full, normal, off, replicated; got 'fast'"):
        Store(store_path, durability="fast")


def test_newer_schema_version_refuses_to_open(store_path):
    Store(store_path).close()
    conn = apsw.Connection(store_path)
    conn.execute(f"PRAGMA user_version={latest_version() + 1}")
    conn.close()
    with pytest.raises(SchemaVersionError, match="newer than this spark_queue understands"):
        Store(store_path)


def test_non_sqlite_file_fails_clearly(store_path):
    with open(store_path, "wb") as f:
        f.write(b"this is a text file, not a database" * 200)
    with pytest.raises(NotAStoreError, match="is not a SQLite database"):
        Store(store_path)


def test_foreign_sqlite_database_is_not_taken_over(store_path):
    conn = apsw.Connection(store_path)
    conn.execute("CREATE TABLE customers(id INTEGER PRIMARY KEY)")
    conn.close()
    with pytest.raises(NotAStoreError, match="not a spark_queue store"):
        Store(store_path)
    conn = apsw.Connection(store_path)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_schema")] == ["customers"]


def test_reopen_keeps_data_and_version(store_path):
    with Store(store_path) as store:
        store.publish_many("t", range(3))
    with Store(store_path, create=False) as store:
        assert store.topic("t").bounds() == (0, 3)


def test_readonly_open_reads_but_cannot_write(store_path):
    with Store(store_path) as store:
        store.publish("t", 1)
    with Store(store_path, readonly=True) as store:
        assert store.read("t")[0].value == 1
        with pytest.raises(ReadOnlyStoreError, match="opened read-only"):
            store.publish("t", 2)
        assert store.topic("t").latest_offset() == 1


def test_backup_is_a_complete_store_and_never_overwrites(store_path, tmp_path):
    dest = str(tmp_path / "copy.sqlite")
    with Store(store_path) as store:
        store.publish_many("t", range(1000))
        store.commit_offsets("c", {"t": 10})
        assert store.backup(dest) > 0
        with pytest.raises(StoreError, match="already exists"):
            store.backup(dest)
    with Store(dest, create=False) as copy:
        assert copy.topic("t").bounds() == (0, 1000)
        assert copy.committed_offsets("c") == {"t": 10}
        assert copy.check().ok


def test_check_reports_a_hole_in_offsets(store):
    store.publish_many("t", range(5))
    store.conn.execute("DELETE FROM sq_events WHERE offset = 2")
    report = store.check()
    assert not report.ok
    assert "no longer dense" in report.problems[0]
