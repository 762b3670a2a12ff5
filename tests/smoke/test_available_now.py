"""``run_available_now`` drains a backlog in bounded batches, exactly once, on every pyspark.

On 4.0 and 4.1 an ``availableNow`` run of a Python source reads one bounded
batch, so the helper reruns the query from its checkpoint; on 4.2+ one run
does it all. The matrix runs this file from the installed wheel on each
supported minor. Self-contained: the killed driver is a script written here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from spark_queue.store import Store

BACKLOG = 5_000  # five full batches: bounded batches and a kill between them, at half the runs
MAX_ROWS = 1000
TIMEOUT_S = 600

pytestmark = pytest.mark.slow


def drain_writer(spark, store_path: str, checkpoint: str, gate: str | None = None):
    """source topic -> the sink topic ``copy``, each event's source offset as the value.

    With ``gate`` (a file name) the third micro-batch and later ones wait, before writing
    anything, until that file exists: a test can kill the drain between batches for sure.
    """
    copies = (
        spark.readStream.format("sqliteq")
        .option("path", store_path)
        .option("topic", "events")
        .option("maxRowsPerTrigger", MAX_ROWS)
        .load()
        .selectExpr("CAST(offset AS STRING) AS value")
    )
    if gate is None:
        writer = (copies.writeStream.format("sqliteq")
                  .option("path", store_path).option("topic", "copy"))
    else:
        def write_batch(batch, batch_id: int) -> None:
            while batch_id >= 2 and not os.path.exists(gate):
                time.sleep(0.05)
            # sinkId + batchId: a replayed batch is skipped, so exactly once through foreachBatch.
            (batch.write.format("sqliteq").mode("append").option("topic", "copy")
             .option("sinkId", "copy").option("batchId", batch_id).save(store_path))

        writer = copies.writeStream.foreachBatch(write_batch)
    return writer.option("checkpointLocation", checkpoint)


def publish_backlog(store_path: str) -> None:
    with Store(store_path) as store:
        store.publish_many("events", [{"n": n} for n in range(BACKLOG)])


def copied_offsets(store_path: str) -> list[int]:
    with Store(store_path, readonly=True) as store:
        if not store.topic("copy").exists():
            return []
        return [int(event.value) for event in store.read("copy", 0, limit=10 * BACKLOG)]


def test_a_backlog_drains_in_batches_of_at_most_max_rows_each_row_exactly_once(spark, tmp_path):
    from spark_queue.connector import compat
    from spark_queue.spark import run_available_now

    store_path = str(tmp_path / "store.sqlite")
    publish_backlog(store_path)
    run = run_available_now(drain_writer(spark, store_path, str(tmp_path / "ckpt")))
    assert sum(run.batches) == BACKLOG
    assert all(0 < rows <= MAX_ROWS for rows in run.batches), run.batches
    assert sorted(copied_offsets(store_path)) == list(range(BACKLOG))
    # 4.2+: one availableNow run of bounded batches; before: one run per batch, then an
    # empty run that shows the end was reached.
    expected_runs = 1 if compat.HAS_ADMISSION_CONTROL else BACKLOG // MAX_ROWS + 1
    assert run.runs == expected_runs


DRIVER = """
    import os, sys
    sys.path.insert(0, {tests!r})
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from test_available_now import drain_writer
    from spark_queue.spark import run_available_now

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    run = run_available_now(drain_writer(spark, {store!r}, {checkpoint!r}, {gate!r}))
    print("RESULT", run.runs, sum(run.batches), max(run.batches, default=0), flush=True)
"""


def start_driver(script: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, script], start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_drain_killed_in_the_middle_then_rerun_still_gives_every_row_exactly_once(tmp_path):
    store_path = str(tmp_path / "store.sqlite")
    publish_backlog(store_path)
    gate = tmp_path / "go"
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER.format(
        tests=os.path.dirname(os.path.abspath(__file__)), store=store_path,
        checkpoint=str(tmp_path / "ckpt"), gate=str(gate),
    )))
    first = start_driver(str(script))
    deadline = time.monotonic() + TIMEOUT_S
    try:
        # Two batches are in and the third waits at the gate: the kill lands mid-drain.
        while len(copied_offsets(store_path)) < 2 * MAX_ROWS:
            assert first.poll() is None, first.stdout.read()[-3000:]
            assert time.monotonic() < deadline, "no batch was committed in time"
            time.sleep(0.1)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    assert sorted(copied_offsets(store_path)) == list(range(2 * MAX_ROWS))

    gate.touch()

    second = start_driver(str(script))
    output, _ = second.communicate(timeout=TIMEOUT_S)
    assert second.returncode == 0, output[-3000:]
    result = [line for line in output.splitlines() if line.startswith("RESULT ")]
    assert result, output[-3000:]
    _, runs, rows, largest = result[-1].split()
    assert int(largest) <= MAX_ROWS
    assert sorted(copied_offsets(store_path)) == list(range(BACKLOG))
