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

from spark_queue.store import Store, sinks

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


def run_query(spark, tmp_path, dst: str) -> None:
    """sqliteq -> sqliteq in BATCH-row micro-batches, to its end or its failure."""
    query = (
        spark.readStream.format("sqliteq").option("path", str(tmp_path / "src.sqlite"))
        .option("topic", "in").option("maxRowsPerTrigger", BATCH)
        .option("valueFormat", "string").load()
        .selectExpr("CAST(offset AS STRING) AS key", "value")
        .writeStream.format("sqliteq").option("path", dst).option("topic", "out")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True).start()
    )
    try:
        query.awaitTermination()
    finally:
        query.stop()


def test_disk_full_in_sink_commit_fails_clean_then_restart_is_exactly_once(
    spark, tmp_path, small_disk
):
    mount, grow = small_disk
    dst_path = str(mount / "dst.sqlite")
    with Store(str(tmp_path / "src.sqlite")) as src:
        # ~1 KB rows that do not compress: 6 MB in all, twice the disk.
        src.publish_many("in", (os.urandom(512).hex() for _ in range(ROWS)))
    Store(dst_path).close()

    with pytest.raises(StreamingQueryException, match="disk holding the store is full"):
        run_query(spark, tmp_path, dst_path)
    with Store(dst_path) as dst:
        assert dst.check().ok
        written = dst.latest_offset("out") if dst.has_topic("out") else 0
        # Whole micro-batches only: the failed one left nothing behind.
        assert written % BATCH == 0 and written < ROWS

    grow()
    run_query(spark, tmp_path, dst_path)  # the restart, from the same checkpoint
    with Store(dst_path) as dst, Store(str(tmp_path / "src.sqlite")) as src:
        out = dst.read("out")
        assert sorted(int(e.key) for e in out) == list(range(ROWS))
        assert [e.value for e in sorted(out, key=lambda e: int(e.key))] == [
            e.value for e in src.read("in")]
        assert dst.check().ok
        # One ledger row: the query's batches, replays skipped, none lost.
        assert len(sinks.list_ledger(dst.conn)) == 1
