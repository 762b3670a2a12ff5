"""Exactly once through real crashes: SIGKILL the driver of a streaming query into sqliteq.

Each run is a driver subprocess (its own JVM and Python workers, in its own
process group) that the test kills with SIGKILL, then restarts from the same
checkpoint. Kills land either in the exact window the ledger exists for (the
sink's transaction is durable, Spark's commit log entry is not: the commit
holds there through the ``SPARK_QUEUE_SINK_TEST_*`` hook until killed) or at
an arbitrary moment while batches flow.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import subprocess
import time

import pytest

from spark_queue.store import Store
from spark_queue.store.floor import sinks
from tests.end_to_end import drivers

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

HOOKS_DIR = pathlib.Path(__file__).resolve().parent / "sink_hooks"
TEST_DIR_ENV = "SPARK_QUEUE_SINK_TEST_DIR"
TEST_HOLD_BATCH_ENV = "SPARK_QUEUE_SINK_TEST_HOLD_BATCH"

DRIVER = """
    import os, sys
    from pyspark.sql import SparkSession, functions as F
    import spark_queue
    from spark_queue.connector import compat

    source, dst, checkpoint, trigger, src_arg = sys.argv[1:6]
    # The checkpoint manager spark_queue's own sessions use (the source's crash
    # test keeps Spark's default): exactly once must hold under both.
    spark = (
        SparkSession.builder.master(os.environ.get("SPARK_QUEUE_TEST_MASTER", "local[2]"))
        .appName("sink-crash")
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
        .config(compat.CHECKPOINT_MANAGER_CONF, compat.FILE_SYSTEM_CHECKPOINT_MANAGER)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark_queue.register(spark)
    if source == "rate":
        df = (spark.readStream.format("rate").option("rowsPerSecond", 40).load()
              .select(F.col("value").cast("string").alias("value")))
    elif source == "sqliteq":
        df = (spark.readStream.format("sqliteq").option("path", src_arg).option("topic", "in")
              .option("maxRowsPerTrigger", 150).option("valueFormat", "string").load()
              .select(F.col("value").cast("string").alias("value")))
    else:
        df = (spark.readStream.schema("value STRING").option("maxFilesPerTrigger", 1)
              .json(src_arg))
    writer = (df.writeStream.format("sqliteq").option("path", dst).option("topic", "out")
              .option("createStore", "true").option("checkpointLocation", checkpoint))
    if trigger == "availableNow":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="300 milliseconds")
    query = writer.start()
    query.awaitTermination()
    print("DRIVER-DONE", flush=True)
"""


class Driver:
    def __init__(self, tmp_path: pathlib.Path, source: str, src_arg: str = "-") -> None:
        self.tmp = tmp_path
        self.script = drivers.write_script(tmp_path, DRIVER)
        self.source, self.src_arg = source, src_arg
        self.dst = str(tmp_path / "dst.sqlite")
        self.checkpoint = str(tmp_path / "checkpoint")
        self.hooks = tmp_path / "hooks"
        self.hooks.mkdir()
        self.runs = 0

    def start(self, trigger: str, hold_batch: int | None = None) -> subprocess.Popen:
        # sink_hooks/sitecustomize.py records (and may hold) each sink commit.
        path = os.pathsep.join(filter(None, [str(HOOKS_DIR), os.environ.get("PYTHONPATH")]))
        env = drivers.driver_env(**{TEST_DIR_ENV: str(self.hooks), "PYTHONPATH": path})
        env.pop(TEST_HOLD_BATCH_ENV, None)
        if hold_batch is not None:
            env[TEST_HOLD_BATCH_ENV] = str(hold_batch)
        self.runs += 1
        return drivers.start(
            self.script, self.source, self.dst, self.checkpoint, trigger, self.src_arg,
            env=env, log=self.tmp / f"driver-{self.runs}.log",
        )

    def wait_for(
        self, proc: subprocess.Popen, condition, what: str, timeout_s: float = 240
    ) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if proc.poll() is not None:
                raise AssertionError(
                    f"driver exited ({proc.returncode}) before {what}: {self.log_tail()}"
                )
            if time.monotonic() > deadline:
                drivers.kill_group(proc)
                raise AssertionError(f"timed out waiting for {what}: {self.log_tail()}")
            time.sleep(0.1)

    def run_to_end(self) -> None:
        proc = self.start("availableNow")
        try:
            assert proc.wait(timeout=300) == 0, self.log_tail()
        finally:
            if proc.poll() is None:
                drivers.kill_group(proc)

    def hold_and_kill(self, batch_id: int) -> None:
        """Run until the sink durably committed ``batch_id``; SIGKILL before Spark records it."""
        proc = self.start("processingTime", hold_batch=batch_id)
        marker = self.hooks / f"held-{batch_id}"
        self.wait_for(proc, marker.exists, f"the sink commit of batch {batch_id}")
        drivers.kill_group(proc)
        marker.unlink()
        assert self.ledger().last_batch_id == batch_id
        assert not (pathlib.Path(self.checkpoint) / "commits" / str(batch_id)).exists(), (
            "Spark recorded the batch: the kill missed the window it was meant to hit"
        )

    def kill_while_running(self, after_batch: int) -> None:
        """Run until the ledger passed ``after_batch``, then SIGKILL at an arbitrary moment."""
        proc = self.start("processingTime")
        self.wait_for(
            proc,
            lambda: (entry := self.ledger()) is not None and entry.last_batch_id > after_batch,
            f"a commit after batch {after_batch}",
        )
        time.sleep(random.uniform(0, 0.6))
        drivers.kill_group(proc)

    def ledger(self) -> sinks.SinkLedgerEntry | None:
        if not os.path.exists(self.dst):
            return None
        with Store(self.dst) as store:
            entries = sinks.list_ledger(store.conn)
        assert len(entries) <= 1, entries
        return entries[0] if entries else None

    def commits(self) -> list[dict]:
        path = self.hooks / "commits.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def out_values(self) -> list[str]:
        with Store(self.dst) as store:
            return [e.value for e in store.read("out")]

    def log_tail(self) -> str:
        logs = sorted(self.tmp.glob("driver-*.log"))
        return logs[-1].read_text()[-3000:] if logs else ""


def _assert_exactly_once(values: list[str], expected: list[str]) -> None:
    duplicates = sorted({v for v in values if values.count(v) > 1})
    assert not duplicates, f"written twice: {duplicates[:20]}"
    assert sorted(values) == sorted(expected)


@pytest.mark.master("local[2]")
def test_replay_after_a_crash_between_sink_commit_and_checkpoint_is_skipped(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    expected = []
    for i in range(3):
        rows = [f"b{i}-r{j}" for j in range(5)]
        expected += rows
        part = src / f"part-{i}.json"
        part.write_text("".join(json.dumps({"value": v}) + "\n" for v in rows))
        os.utime(part, (1_700_000_000 + i, 1_700_000_000 + i))
    driver = Driver(tmp_path, "json", str(src))

    driver.hold_and_kill(1)
    before = driver.ledger()
    assert (before.last_batch_id, before.rows) == (1, 10)
    assert sorted(driver.out_values()) == sorted(expected[:10])

    driver.run_to_end()
    replays = [c for c in driver.commits() if c["batch_id"] == 1]
    assert [c["skipped"] for c in replays] == [False, True], driver.commits()
    assert (pathlib.Path(driver.checkpoint) / "commits" / "1").exists()
    after = driver.ledger()
    assert (after.last_batch_id, after.rows) == (2, 15)
    _assert_exactly_once(driver.out_values(), expected)


@pytest.mark.master("local[2]")
def test_rate_to_sqliteq_survives_three_sigkills_exactly_once(tmp_path):
    driver = Driver(tmp_path, "rate")
    driver.hold_and_kill(1)
    driver.kill_while_running(after_batch=driver.ledger().last_batch_id)
    driver.hold_and_kill(driver.ledger().last_batch_id + 2)
    driver.run_to_end()

    values = driver.out_values()
    numbers = sorted(int(v) for v in values)
    # The rate source's rows are a deterministic function of the checkpointed
    # offsets: value = row index. Exactly once means exactly 0..n-1.
    assert numbers == list(range(len(numbers))), "a rate row was lost or written twice"
    assert len(numbers) > 0
    assert driver.ledger().rows == len(values)
    assert any(c["skipped"] for c in driver.commits()), "no replay hit the ledger"


@pytest.mark.master("local-cluster")
def test_sqliteq_to_sqliteq_survives_three_sigkills_exactly_once(tmp_path):
    src = str(tmp_path / "src.sqlite")
    expected = [f"event-{i:05d}" for i in range(3000)]
    with Store(src) as store:
        store.publish_many("in", expected)
    driver = Driver(tmp_path, "sqliteq", src)
    driver.hold_and_kill(2)
    driver.kill_while_running(after_batch=driver.ledger().last_batch_id)
    driver.hold_and_kill(driver.ledger().last_batch_id + 2)
    driver.run_to_end()

    _assert_exactly_once(driver.out_values(), expected)
    assert driver.ledger().rows == len(expected)
    assert any(c["skipped"] for c in driver.commits()), "no replay hit the ledger"
