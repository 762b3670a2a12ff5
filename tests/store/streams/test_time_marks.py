"""Timestamp lookups stay exact without an index entry per event (schema version 6).

``offset_for_timestamp`` (and so ``startingTimestamp``, ``consumer reset
--to-time`` and retention by age) must give the first offset whose timestamp
is at or after T, for timestamps in any order: written by this package, by
another client through ``sq_publish`` or plain SQL, cut by retention, and in
stores written by the code of every earlier schema version. Each case is held
against a scan of every event.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spark_queue.store import Record, Store
from spark_queue.store.file import carray
from spark_queue.store.file.schema import latest_version
from spark_queue.store.streams import time_marks
from tests.store.test_backup_old_stores import release

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "stores"


def brute_force(store: Store, topic: str, ts: int) -> int:
    """The first offset at or after ``ts`` by reading every event (latest if none)."""
    for event in store.read(topic):
        if event.timestamp_ms >= ts:
            return event.offset
    return store.topic(topic).latest_offset()


def assert_exact(store: Store, topic: str) -> None:
    stamps = sorted({e.timestamp_ms for e in store.read(topic)})
    probes = {0, 2**62} | {max(0, s + d) for s in stamps for d in (-1, 0, 1)}
    for ts in sorted(probes):
        assert store.topic(topic).offset_for_timestamp(ts) == brute_force(store, topic, ts), ts


def assert_marks_hold(store: Store) -> None:
    """Each topic's marks: contiguous runs, each maximum at least its events' and never
    decreasing, ending no further than the topic's next offset."""
    conn = store.conn
    for tid, latest in conn.execute("SELECT id, next_offset FROM sq_topics").fetchall():
        marks = conn.execute(
            "SELECT offset, end_offset, max_ts_ms FROM sq_time_marks WHERE topic_id = ? "
            "ORDER BY offset", (tid,)
        ).fetchall()
        running = None
        # A topic may have no marks: fewer than a run of events, all in the tail.
        for (start, end, top), after in zip(marks, [*marks[1:], None], strict=False):
            if after is not None:
                assert after[0] == end and after[2] >= top
            newest = conn.execute(
                "SELECT max(ts_ms) FROM sq_events WHERE topic_id = ? AND offset >= ? "
                "AND offset < ?", (tid, start, end)
            ).fetchall()[0][0]
            running = newest if running is None or newest is None else max(running, newest)
            assert running is None or top >= running
            assert end <= latest


@pytest.fixture
def short_runs(monkeypatch):
    """Runs of 8 events, so a few hundred events make many marks."""
    monkeypatch.setattr(time_marks, "RUN", 8)


def test_every_write_path_with_timestamps_in_any_order_stays_exact(store, short_runs):
    rng = random.Random(7)
    for _ in range(40):
        size = rng.choice([1, 1, 3, 9, 30])
        store.publish_many("t", [Record(i, timestamp_ms=rng.randrange(1000, 1100))
                                 for i in range(size)])
    store.publish("t", "now")  # the store's clock: far above the others
    store.publish_many("t", [Record("old", timestamp_ms=5)])
    assert_marks_hold(store)
    assert_exact(store, "t")
    assert store.conn.execute("SELECT count(*) FROM sq_time_marks").fetchall()[0][0] > 5


def test_events_another_client_wrote_are_found_then_marked_by_the_write_that_fills_a_run(
    store, short_runs
):
    store.publish_many("t", [Record(i, timestamp_ms=100 + i) for i in range(20)])
    with store.write() as conn:  # another client: no marks for its rows
        for ts in (50, 400, 90, 300):
            conn.execute("INSERT INTO sq_publish (topic, value, ts_ms) VALUES ('t', 'x', ?)",
                         (ts,))
    assert_exact(store, "t")  # the unmarked tail is scanned
    store.publish("t", "y", timestamp_ms=200)  # the tail (20..24) is shorter than a run
    assert_exact(store, "t")
    store.publish_many("t", [Record("y", timestamp_ms=200)] * 3)  # now it holds RUN (8)
    assert_marks_hold(store)
    ends, top = store.conn.execute(
        "SELECT max(end_offset), max(max_ts_ms) FROM sq_time_marks").fetchall()[0]
    assert ends == store.topic("t").latest_offset() == 28
    assert top == 400  # the other client's newest event, folded in
    assert_exact(store, "t")
    # A topic only another client ever wrote.
    with store.write() as conn:
        for ts in (9, 3, 7):
            conn.execute("INSERT INTO sq_publish (topic, value, ts_ms) VALUES ('f', 'x', ?)",
                         (ts,))
    assert_exact(store, "f")
    store.publish_many("f", [Record("z", timestamp_ms=1)])
    assert_exact(store, "f")
    store.publish_many("f", [Record("z", timestamp_ms=1)] * 4)
    assert_marks_hold(store)
    assert store.conn.execute(
        "SELECT offset, end_offset, max_ts_ms FROM sq_time_marks WHERE topic_id = "
        "(SELECT id FROM sq_topics WHERE name = 'f')").fetchall() == [(0, 8, 9)]
    assert_exact(store, "f")


def test_retention_folds_another_clients_tail_in_bounded_steps_before_its_cut(
    store, short_runs
):
    """Issue 59, point 6's leftover: a long run of events another client wrote has no
    marks, and retention's cut scanned all of it, under the write lock, in every step. Now
    prune folds the tail in first, each step reading at most its budget of rows, and the cut
    is the one a full scan finds."""
    from spark_queue.store.file.steps import Budget
    from spark_queue.store.streams import retention

    store.publish_many("t", [Record(i, timestamp_ms=10) for i in range(3)])
    with store.write() as conn:  # another client: 100 events, no marks
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99) "
            "INSERT INTO sq_publish (topic, value, ts_ms) SELECT 't', 'x', 100 + i FROM n")
    tid = store.conn.execute("SELECT id FROM sq_topics WHERE name = 't'").fetchall()[0][0]
    with store.snapshot():
        assert time_marks.unmarked_tail(store.conn, tid) == 103
    folds = []
    real_fold = time_marks.fold_tail

    def counted(conn, topic_id, most_rows):
        before = time_marks.unmarked_tail(conn, topic_id)
        more = real_fold(conn, topic_id, most_rows)
        folds.append(before - time_marks.unmarked_tail(conn, topic_id))
        return more

    time_marks.fold_tail = counted
    try:
        [result] = retention.prune_topics(store.file, [(tid, "t")], retention_ms=1_000,
                                          at_ms=1_150, budget=Budget(rows=24))
    finally:
        time_marks.fold_tail = real_fold
    assert folds and max(folds) <= 24 and sum(folds) >= 103 - 2 * time_marks.RUN
    assert result.earliest_after == 53 and store.topic("t").bounds() == (53, 103)
    assert_marks_hold(store)
    assert_exact(store, "t")
    with store.snapshot():
        assert time_marks.unmarked_tail(store.conn, tid) < time_marks.RUN


def test_single_publishes_write_a_mark_per_run_and_lookups_stay_exact(store, short_runs):
    """One event per transaction writes no mark until the tail holds a run: a single
    publish pays no mark statement, and a lookup never scans more than a run or two."""
    rng = random.Random(5)
    for n in range(30):
        store.publish("t", n, timestamp_ms=rng.randrange(0, 1000))
        marked = store.conn.execute(
            "SELECT coalesce(max(end_offset), 0) FROM sq_time_marks").fetchall()[0][0]
        assert store.topic("t").latest_offset() - marked < time_marks.RUN
        assert_marks_hold(store)
    assert store.conn.execute("SELECT count(*) FROM sq_time_marks").fetchall()[0][0] == 3
    assert_exact(store, "t")


def test_retention_and_delete_keep_lookups_exact(store, short_runs):
    rng = random.Random(3)
    for _ in range(20):
        store.publish_many("t", [Record(i, timestamp_ms=rng.randrange(0, 500)) for i in range(5)])
    store.topic("t").prune(retention_rows=37)
    assert_exact(store, "t")
    marks = store.conn.execute("SELECT min(offset), min(end_offset) FROM sq_time_marks")
    first, first_end = marks.fetchall()[0]
    assert first <= 63 < first_end  # the runs retention deleted whole are forgotten
    # Retention by age over timestamps out of order: everything before the first young one.
    store.topic("t").prune(retention_ms=100, at_ms=500)
    survivors = store.read("t")
    assert survivors and survivors[0].timestamp_ms >= 400
    assert_exact(store, "t")
    store.topic("t").delete()
    store.publish_many("t", [Record("again", timestamp_ms=7)])
    assert store.topic("t").offset_for_timestamp(8) == 1
    assert store.topic("t").offset_for_timestamp(7) == 0
    assert_marks_hold(store)


def test_a_new_store_has_no_per_event_time_index(store):
    names = {row[0] for row in store.conn.execute("SELECT name FROM sqlite_schema")}
    assert "sq_time_marks" in names and "sq_events_ts" not in names


@pytest.mark.parametrize("version", range(1, latest_version()))
def test_stores_of_every_earlier_version_migrate_with_their_marks(version, tmp_path):
    path = tmp_path / "store.sqlite"
    shutil.copyfile(FIXTURES / f"v{version}.sqlite", path)
    with Store(str(path)) as store:
        assert [e.value for e in store.read("events")] == [{"n": i} for i in range(5)] + [
            "text", b"\x00bytes"]
        assert [e.value for e in store.read("other")] == ["a", "b"]
        assert store.committed_offsets("reader") == {"events": 3}
        assert_marks_hold(store)
        for topic in ("events", "other"):
            assert_exact(store, topic)
        assert store.check().ok


WRITE_WITH_OLD_RELEASE = """
import random, sys
from spark_queue.store import Record, Store
rng = random.Random(11)
with Store(sys.argv[1]) as store:
    for n in range(30):
        store.publish_many("t", [Record(n, timestamp_ms=rng.randrange(0, 10_000))
                                 for _ in range(400)])
    store.publish_many("u", [Record("u", timestamp_ms=t) for t in range(100)])
    print(store.conn.execute("PRAGMA user_version").fetchall()[0][0])
"""


def test_a_large_store_written_by_the_previous_release_migrates_exactly(tmp_path):
    """12,100 events with timestamps in random order, written by the code of the schema
    before the time marks (version 5; a fixture's commit, tests/fixtures/stores/README.md):
    the migration's marks (a run per 4096 offsets) give exact lookups."""
    previous = 5  # version 6 brought the marks
    path = str(tmp_path / "old.sqlite")
    done = subprocess.run(
        [sys.executable, "-c", WRITE_WITH_OLD_RELEASE, path],
        env={**os.environ, "PYTHONPATH": str(release(previous, tmp_path))}, cwd=tmp_path,
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(previous)
    with Store(path) as store:
        assert store.conn.execute("SELECT count(*) FROM sq_time_marks").fetchall()[0][0] == 4
        assert_marks_hold(store)
        events = store.read("t")
        assert [e.value for e in events] == [n for n in range(30) for _ in range(400)]
        rng = random.Random(5)
        for ts in [rng.randrange(0, 10_002) for _ in range(60)]:
            assert store.topic("t").offset_for_timestamp(ts) == next(
                (e.offset for e in events if e.timestamp_ms >= ts), 12_000)
        assert_exact(store, "u")


def test_check_finds_a_mark_another_client_broke_and_deleting_the_marks_mends_it(
    store, short_runs
):
    for start in range(0, 40, 10):
        store.publish_many("t", [Record(i, timestamp_ms=100 + start + i) for i in range(10)])
    assert store.check().ok
    start, end = store.conn.execute(
        "SELECT offset, end_offset FROM sq_time_marks ORDER BY offset LIMIT 1 OFFSET 1"
    ).fetchall()[0]
    with store.write() as conn:  # another client lowers a maximum: lookups would skip
        conn.execute("UPDATE sq_time_marks SET max_ts_ms = 0 WHERE offset = ?", (start,))
    problems = "\n".join(store.check().problems)
    assert f"topic 't': the time mark of offsets {start}..{end - 1} is wrong" in problems
    assert "DELETE FROM sq_time_marks" in problems
    with store.write() as conn:
        conn.execute("DELETE FROM sq_time_marks WHERE topic_id = "
                     "(SELECT id FROM sq_topics WHERE name = 't')")
    assert store.check().ok
    assert_exact(store, "t")  # scanned
    store.publish("t", "again")
    assert_marks_hold(store)
    assert_exact(store, "t")


def test_a_large_write_is_marked_in_short_runs(store, short_runs, monkeypatch):
    """A lookup never scans a whole batch: a batch of 100 gets runs of fewer than 16
    (RUN 8 here), and with per-record timestamps each chunk's runs carry that chunk's
    own maximum, not the batch's."""
    monkeypatch.setattr(carray, "CHUNK", 20)
    store.publish_many("t", [Record(i, timestamp_ms=1000 + i) for i in range(100)])
    store.publish_many("t", ["plain"] * 50)
    runs = store.conn.execute(
        "SELECT offset, end_offset, max_ts_ms FROM sq_time_marks ORDER BY offset"
    ).fetchall()
    assert all(end - start < 16 for start, end, _ in runs[:-1])
    assert runs[0][2] <= 1000 + 19  # the first chunk's maximum
    assert_marks_hold(store)
    assert_exact(store, "t")
