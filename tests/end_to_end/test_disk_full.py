"""A full disk during a sink commit: the batch fails whole, the query stops saying so,
and after space is freed a restart from the checkpoint finishes exactly once.

The destination store lives on a real small filesystem (a tmpfs mounted for
the test; tests and CI run as root), so SQLite meets a genuine ENOSPC.
A file-size rlimit would not do: SQLite reports EFBIG as an I/O error, not
as a full disk.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from pyspark.errors import StreamingQueryException

from spark_queue.store import Store
from spark_queue.store.floor import sinks
from tests.end_to_end.source_helpers import copy_topic

pytestmark = pytest.mark.slow

DISK_BYTES = 3 * 1024 * 1024
ROWS, BATCH = 6000, 1000

@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of DISK_BYTES; yields (mount point, a function that grows it)."""
    mount = tmp_path / "small_disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(mount)],
                   check=True)

    def grow() -> None:
        subprocess.run(["mount", "-o", "remount,size=256m", str(mount)], check=True)

    try:
        yield mount, grow
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_disk_full_in_sink_commit_fails_clean_then_restart_is_exactly_once(
    spark, tmp_path, small_disk
):
    mount, grow = small_disk
    src_path, dst_path = str(tmp_path / "src.sqlite"), str(mount / "dst.sqlite")
    checkpoint = str(tmp_path / "checkpoint")
    with Store(src_path) as src:
        # ~1 KB rows that do not compress: 6 MB in all, twice the disk.
        src.publish_many("in", (os.urandom(512).hex() for _ in range(ROWS)))
    Store(dst_path).close()

    with pytest.raises(StreamingQueryException, match="disk holding the store is full"):
        copy_topic(spark, src_path, dst_path, checkpoint, maxRowsPerTrigger=BATCH)
    with Store(dst_path) as dst:
        assert dst.check().ok
        written = dst.topic("out").latest_offset() if dst.topic("out").exists() else 0
        # Whole micro-batches only: the failed one left nothing behind.
        assert written % BATCH == 0 and written < ROWS

    grow()
    copy_topic(spark, src_path, dst_path, checkpoint, maxRowsPerTrigger=BATCH)  # the restart
    with Store(dst_path) as dst, Store(src_path) as src:
        out = dst.read("out")
        assert sorted(int(e.key) for e in out) == list(range(ROWS))
        assert [e.value for e in sorted(out, key=lambda e: int(e.key))] == [
            e.value for e in src.read("in")]
        assert dst.check().ok
        # One ledger row: the query's batches, replays skipped, none lost.
        assert len(sinks.list_ledger(dst.conn)) == 1
