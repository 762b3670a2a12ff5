"""Opening a file: nothing is written before it is known to be a store (or new and
empty); creation and migration are race-free across processes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap

import apsw
import pytest

from spark_queue.errors import NotAStoreError, StoreBusyError, StoreError
from spark_queue.store import Store
from spark_queue.store.file.schema import APPLICATION_ID, MIGRATIONS, latest_version
from spark_queue.store.maintenance import check_file

# Python's stdlib sqlite3 links another SQLite than apsw: it runs only in a
# subprocess, never in this process, which holds apsw connections.
FOREIGN = textwrap.dedent(
    """
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1])
    if sys.argv[2] == "wal":
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO customers (name) VALUES (?)", [("a",), ("b",)])
    conn.commit()
    conn.close()
    """
)


def make_foreign_sqlite(path: str, journal: str = "delete") -> bytes:
    """A SQLite database of someone else's, made by another SQLite library; returns its bytes."""
    subprocess.run([sys.executable, "-c", FOREIGN, path, journal], check=True)
    return file_digest(path)


def file_digest(path: str) -> bytes:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).digest()


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_a_foreign_sqlite_file_stays_byte_identical_after_every_refused_open(store_path, journal):
    before = make_foreign_sqlite(store_path, journal)
    opens = [
        lambda: Store(store_path),
        lambda: Store(store_path, create=False),
        lambda: Store(store_path, readonly=True),
        lambda: Store(store_path, durability="full", busy_timeout_ms=0),
    ]
    for open_store in opens:
        with pytest.raises(NotAStoreError, match="not a spark_queue store.*left untouched"):
            open_store()
        assert file_digest(store_path) == before
    report = check_file(store_path)
    assert not report.ok and "not a spark_queue store" in report.problems[0]
    assert file_digest(store_path) == before
    # A read-only connection to a WAL file cannot remove SQLite's side files at
    # close; they stay empty of frames, so the database's content is the same.
    wal = store_path + "-wal"
    assert not os.path.exists(wal) or os.path.getsize(wal) == 0


def test_a_new_empty_file_becomes_a_store(store_path):
    open(store_path, "wb").close()
    with Store(store_path, create=False) as store:
        assert store.conn.execute("PRAGMA application_id").fetchall()[0][0] == APPLICATION_ID
        assert store.conn.execute("PRAGMA journal_mode").fetchall()[0][0] == "wal"
        store.publish("t", 1)


def test_a_directory_as_path_is_a_named_error(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        Store(str(tmp_path))
    assert not check_file(str(tmp_path)).ok


def test_an_old_store_migrates_forward_in_one_transaction_keeping_its_data(store_path):
    conn = apsw.Connection(store_path)
    conn.execute("PRAGMA journal_mode=WAL")
    with conn:
        conn.execute(MIGRATIONS[0])
        conn.execute(MIGRATIONS[1])
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute("PRAGMA user_version=2")
        conn.execute("INSERT INTO sq_topics (name, next_offset, created_ms) VALUES ('t', 1, 0)")
        conn.execute("INSERT INTO sq_events VALUES (1, 0, 0, NULL, 'old', 1, NULL)")
    conn.close()
    with Store(store_path) as store:
        assert store.conn.execute("PRAGMA user_version").fetchall()[0][0] == latest_version()
        assert [e.value for e in store.read("t")] == ["old"]
        assert store.publish("t", "new") == 1
        assert store.check().ok


OPENER = textwrap.dedent(
    """
    import sys
    from spark_queue.store import Store
    print("ready", flush=True)
    sys.stdin.readline()  # "go": every process opens the same new paths in the same order
    failures = []
    for path in sys.argv[1:]:
        try:
            Store(path).close()  # the default busy timeout, as users open
        except Exception as exc:
            failures.append(f"{path}: {type(exc).__name__}: {exc}")
    print(len(failures), *failures, sep="\\n", flush=True)
    """
)


@pytest.mark.slow
def test_ten_processes_opening_twenty_new_paths_at_once_all_succeed(tmp_path):
    paths = [str(tmp_path / f"new{i}.sqlite") for i in range(20)]
    procs = [
        subprocess.Popen([sys.executable, "-c", OPENER, *paths],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(10)
    ]
    # Release them together once every one has imported spark_queue.
    assert [proc.stdout.readline().strip() for proc in procs] == ["ready"] * 10
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    reports = [proc.communicate(timeout=300)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 10
    assert [report.strip() for report in reports] == ["0"] * 10, reports
    for path in paths:
        with Store(path, create=False) as store:
            assert store.conn.execute("PRAGMA user_version").fetchall()[0][0] == latest_version()
            assert store.check().ok


def test_an_open_that_waits_out_the_busy_timeout_names_the_lock_then_succeeds(store_path):
    open(store_path, "wb").close()
    holder = apsw.Connection(store_path)
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM sqlite_schema").fetchall()  # a reader holds the file
    with pytest.raises(StoreBusyError, match="locked by another process.*busy_timeout_ms"):
        Store(store_path, busy_timeout_ms=200)
    holder.execute("COMMIT")
    holder.close()
    with Store(store_path) as store:
        assert store.publish("t", 1) == 0


def _write_pages(store: Store, pages: int) -> None:
    """About ``pages`` 4 KiB pages of events, in transactions of ~25 pages each."""
    for _ in range(pages // 25):
        store.publish_many("t", ["x" * 4000] * 25)


def test_a_connection_opened_before_the_store_was_marked_never_checkpoints_it(store_path):
    """Issue 58 point 2: SQLite's autocheckpoint is per connection, and a Store opened before
    the replicator marked the store kept it, racing Litestream. The store's WAL hook asks the
    file at each checkpoint it would make: from the mark on, none."""
    from spark_queue.store import ReplicaCycles

    with Store(store_path) as early:
        early.publish("t", "before the mark")
        cycles = ReplicaCycles(store_path)
        cycles.mark("file:///replica")
        cycles.close()
        _write_pages(early, 1600)
        # Never checkpointed: every page written since is still in the WAL.
        assert os.path.getsize(store_path + "-wal") > 1500 * 4096


def test_an_unreplicated_store_is_checkpointed_as_sqlite_would(store_path):
    with Store(store_path) as store:
        _write_pages(store, 1600)
        # Checkpointed at ~1,000 pages and the WAL started over: it never held all 1,600.
        assert os.path.getsize(store_path + "-wal") < 1200 * 4096
