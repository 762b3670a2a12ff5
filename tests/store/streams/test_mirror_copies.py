"""The store's side of a copy being made: the hold saved with the bounds it starts from,
positions and reads that never fall below the earliest offset, a topic checked to be the
one opened, and one exporter per hold (the export's own cases: tests/kafka/
test_export_guards.py)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from spark_queue.errors import (
    MirrorGapError,
    MirrorLeaseError,
    MirrorTopicChangedError,
    UnknownTopicError,
)
from spark_queue.store import MirrorCopies

ROOT = str(pathlib.Path(__file__).resolve().parents[3])


@pytest.fixture
def copies(store):
    store.publish_many("t", [f"e{i}" for i in range(10)])
    opened = MirrorCopies(store, "p.").acquire()
    yield opened
    opened.release()


def test_opening_a_copy_holds_every_event_before_anything_else_is_asked(copies, store):
    opened = copies.open("t")
    assert (opened.earliest, opened.latest, opened.mark.shift) == (0, 10, 0)
    assert (opened.new_hold, opened.new_shift) == (True, True)
    assert store.committed_offsets("sqliteq.mirror.p.") == {"t": 0}
    assert store.topic("t").prune(retention_rows=2)[0].earliest_after == 0  # held by the copy
    copies.save([(opened.mark, 10)])
    assert store.topic("t").prune(retention_rows=2)[0].earliest_after == 8


def test_a_position_below_the_earliest_offset_is_refused_never_saved(copies, store):
    opened = copies.open("t")
    store.topic("t").prune(retention_rows=5, force=True)
    with pytest.raises(MirrorGapError, match=r"'p.t' needs the events from offset 3 on.*up to 4"):
        copies.save([(opened.mark, 3)])
    assert store.committed_offsets("sqliteq.mirror.p.") == {"t": 0}  # as opened


def test_rows_start_where_asked_or_not_at_all(copies, store):
    mark = copies.open("t").mark
    assert copies.rows(mark, 2, 4).column("offset").to_pylist() == [2, 3]
    store.topic("t").prune(retention_rows=5, force=True)
    with pytest.raises(MirrorGapError, match="rows from offset 2 on"):
        copies.rows(mark, 2, 7)
    assert store.read_arrow("t", 2, 7).column("offset").to_pylist() == [5, 6]  # others clamp


def test_a_topic_deleted_or_created_anew_is_not_the_one_opened(copies, store):
    mark = copies.open("t").mark
    store.topic("t").delete()
    copies.save([(mark, 10)])  # nothing left to hold
    with pytest.raises(MirrorTopicChangedError, match="'t' was deleted while"):
        copies.bounds(mark)
    store.publish_many("t", ["new"])
    with pytest.raises(MirrorTopicChangedError, match="deleted and created anew"):
        copies.rows(mark, 0, 1)
    with pytest.raises(MirrorTopicChangedError, match="deleted and created anew"):
        copies.open("t")
    with pytest.raises(UnknownTopicError):
        copies.open("never")


def test_one_exporter_per_hold_and_the_second_is_told_who(copies, store):
    with pytest.raises(MirrorLeaseError, match=rf"process {os.getpid()} on host .* since 20"):
        MirrorCopies(store, "p.").acquire()
    other = MirrorCopies(store, "q.").acquire()  # another prefix: another copy
    other.release()
    copies.release()
    again = MirrorCopies(store, "p.").acquire()
    again.release()


def test_an_exporter_whose_lease_was_taken_saves_nothing(copies, store):
    mark = copies.open("t").mark
    with store.write() as conn:
        conn.execute("UPDATE sq_meta SET value = json_set(value, '$.token', 'other', "
                     "'$.until_ms', 1) WHERE key = 'mirror_lease/sqliteq.mirror.p.'")
    with pytest.raises(MirrorLeaseError, match="lost its lease"):
        copies.save([(mark, 10)])
    copies.release()  # leaves the other's lease alone
    assert store.conn.execute("SELECT count(*) FROM sq_meta WHERE key LIKE 'mirror_lease/%'"
                              ).fetchone()[0] == 1


def test_a_refused_opening_leaves_no_hold_and_no_shift_another_copy_relies_on(copies, store):
    opened = copies.open("t")
    copies.abandon(opened)
    assert store.committed_offsets("sqliteq.mirror.p.") == {}
    assert store.topic("t").mirror_shift() is None
    opened = copies.open("t")
    store.commit_offsets("sqliteq.mirror.q.", {"t": 0})  # another prefix's copy
    copies.abandon(opened)
    assert store.topic("t").mirror_shift() == 0


@pytest.mark.slow  # a subprocess, killed
def test_a_lease_whose_process_was_killed_is_taken_at_once_on_the_same_machine(store):
    store.topic("t").create()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from spark_queue.store import MirrorCopies, Store\n"
         "MirrorCopies(Store(sys.argv[1])).acquire()\n"
         "print('held', flush=True)\n"
         "time.sleep(120)\n", store.path],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(MirrorLeaseError, match=f"process {holder.pid} "):
            MirrorCopies(store).acquire()
    finally:
        holder.kill()
        holder.wait(30)
    MirrorCopies(store).acquire().release()  # 30 s before its lease would run out


def test_a_topic_created_anew_under_the_same_id_is_still_not_the_one_opened(copies, store):
    mark = copies.open("t").mark
    store.topic("t").delete()
    store.publish_many("t", ["new"])  # the only topic: SQLite gives the new row the same id
    with store.snapshot():
        assert store.conn.execute("SELECT id FROM sq_topics WHERE name = 't'").fetchone()[0] \
            == mark.topic_id
    with pytest.raises(MirrorTopicChangedError, match="deleted and created anew"):
        copies.bounds(mark)
    with pytest.raises(MirrorTopicChangedError, match="deleted and created anew"):
        copies.open("t")


def test_a_copy_abandoned_at_its_first_opening_opens_again_as_new(copies, store):
    copies.abandon(copies.open("t"))
    store.topic("t").prune(retention_rows=4)  # nothing holds it now
    opened = copies.open("t")
    assert (opened.mark.shift, opened.new_shift) == (6, True)
