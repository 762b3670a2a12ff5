"""Default options on a Spark standalone cluster whose workers cannot see the driver's disk.

The cluster (tests/cluster/standalone.py) has a master and two workers, each
in a mount namespace where this run's basetemp, and so every store file, is
an empty directory. Every test here uses the connector's default options and
expects exactly the rows it would get on ``local[2]``; killed workers and a
killed driver must change nothing in what a sink holds. Runs in the child
pytest that tests/end_to_end/test_local_cluster_suites.py starts with
SPARK_QUEUE_TEST_MASTER=standalone (as root: the namespaces need it).

Races are made impossible with a gate: a Python UDF that records where its
task runs and then waits for a file the test creates, so a worker is killed
while it certainly holds a running task.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from spark_queue.spark.query_progress import end_offset
from spark_queue.store import Store
from tests.end_to_end import drivers

pytestmark = [pytest.mark.master("standalone"), pytest.mark.slow]

ROWS = 60_000
WAIT_S = 300
SINKS = ("topic", "queue")


def wait_for(condition, what: str, timeout_s: float = WAIT_S):
    deadline = time.monotonic() + timeout_s
    while not (result := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return result


def publish(store_path: str, topic: str = "in", rows: int = ROWS) -> None:
    with Store(store_path) as store:
        store.publish_many(topic, ({"n": i} for i in range(rows)))


def gate(spark, gate_dir: pathlib.Path, from_n: int = 0):
    """A UDF on ``n`` that passes rows below ``from_n`` and, for the others, writes
    ``started-<pid>`` (its working directory: the worker's) and waits for ``release``."""
    from pyspark.sql.functions import udf

    directory = str(gate_dir)

    def wait(n):
        if n >= from_n:
            marker = os.path.join(directory, f"started-{os.getpid()}")
            if not os.path.exists(marker):
                with open(marker, "w") as handle:
                    handle.write(os.getcwd())
            while not os.path.exists(os.path.join(directory, "release")):
                time.sleep(0.05)
        return n

    return udf(wait, "long")


def worker_running_a_gated_task(cluster, gate_dir: pathlib.Path) -> int:
    """The index of a worker whose executor runs a task that waits at the gate."""
    def started():
        for marker in gate_dir.glob("started-*"):
            where = marker.read_text()
            for index in range(len(cluster.workers)):
                if f"{os.sep}worker-{index}{os.sep}" in where + os.sep:
                    return str(index)
        return None
    return int(wait_for(started, "a task at the gate"))


def kill_worker(cluster, index: int) -> None:
    """SIGKILL the worker's process group: the worker, its executor and their Python workers."""
    cluster.workers[index].kill(signal.SIGKILL)
    cluster.workers[index].process.wait(timeout=60)


def restart_worker(cluster, index: int) -> None:
    cluster.start_worker(index)
    cluster.wait_for_workers(2)


def n_of(value) -> int:
    """``n`` of a stored ``{"n": ...}`` payload, decoded as JSON or kept as its text."""
    return (json.loads(value) if isinstance(value, str | bytes) else value)["n"]


def assert_every_n_once(values: list, rows: int = ROWS) -> None:
    assert sorted(values) == list(range(rows))


def test_the_workers_cannot_see_the_drivers_disk_and_both_run_executors(
    spark, standalone_cluster, store_path
):
    publish(store_path, rows=1)
    seen = (
        spark.sparkContext.parallelize(range(8), 8)
        .map(lambda _: (os.getcwd().split(os.sep + "worker-")[1][:1],
                        os.path.exists(store_path),
                        os.path.exists(os.path.dirname(store_path))))
        .collect()
    )
    assert {worker for worker, _, _ in seen} == {"0", "1"}
    # Not the file, nor the test's directory the driver made: the basetemp there is a tmpfs
    # of the worker's own (where executors of earlier tests may have left files).
    assert not any(exists or directory for _, exists, directory in seen)


def test_batch_read_with_default_options_gives_exact_rows(spark, store_path):
    publish(store_path)
    df = spark.read.format("sqliteq").option("path", store_path).option("topic", "in").load()
    assert df.count() == ROWS
    assert df.select("offset").distinct().count() == ROWS
    typed = (spark.read.format("sqliteq").schema("n LONG").option("path", store_path)
             .option("topic", "in").load())
    assert_every_n_once([r.n for r in typed.collect()])


@pytest.mark.parametrize("trigger", ["availableNow", "processingTime"])
def test_a_stream_into_parquet_gives_exact_rows(spark, store_path, shared_dir, tmp_path, trigger):
    publish(store_path)
    writer = (
        spark.readStream.format("sqliteq").option("path", store_path).option("topic", "in")
        .option("maxRowsPerTrigger", 25_000).load()
        .writeStream.format("parquet").option("path", str(shared_dir / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
    )
    if trigger == "availableNow":
        writer.trigger(availableNow=True).start().awaitTermination()
    else:
        query = writer.trigger(processingTime="0 seconds").start()
        try:
            wait_for(lambda: end_offset(query.lastProgress, "in") == ROWS
                     or query.exception(), "the stream to reach the end")
            assert query.exception() is None
        finally:
            query.stop()
    out = spark.read.parquet(str(shared_dir / "out"))
    assert out.count() == ROWS
    assert out.select("offset").distinct().count() == ROWS


@pytest.mark.parametrize("latency_mode", [None, "low", "throughput"])
def test_a_stream_from_one_topic_into_another_gives_exact_rows(
    spark, store_path, tmp_path, latency_mode
):
    publish(store_path, rows=20_000)
    reader = spark.readStream.format("sqliteq").option("path", store_path).option("topic", "in")
    if latency_mode is not None:
        reader = reader.option("latencyMode", latency_mode).option("maxRowsPerTrigger", 8_000)
    (reader.load().select("key", "value").writeStream.format("sqliteq")
     .option("path", store_path).option("topic", "out")
     .option("checkpointLocation", str(tmp_path / "checkpoint"))
     .trigger(availableNow=True).start().awaitTermination())
    with Store(store_path) as store:
        out = store.read("out", 0, 30_000)
    assert [e.offset for e in out] == list(range(20_000))
    assert_every_n_once([n_of(e.value) for e in out], 20_000)


def test_run_available_now_drains_in_bounded_batches(spark, store_path, shared_dir, tmp_path):
    from spark_queue.spark import run_available_now

    publish(store_path, rows=12_000)
    raw = (spark.readStream.format("sqliteq").option("path", store_path).option("topic", "in")
           .option("maxRowsPerTrigger", 5_000).load())
    run = run_available_now(
        raw.writeStream.format("parquet").option("checkpointLocation", str(tmp_path / "ck")),
        str(shared_dir / "drained"))
    assert run.batches and max(run.batches) <= 5_000
    assert spark.read.parquet(str(shared_dir / "drained")).count() == 12_000


def test_df_write_and_write_stream_into_a_topic_and_a_queue(spark, store_path, tmp_path):
    frame = spark.range(30_000).repartition(4).selectExpr(
        "to_json(named_struct('n', id)) AS value", "concat('job-', id) AS idempotency_key")
    frame.select("value").write.format("sqliteq").mode("append").option("topic", "t").option(
        "createStore", "true").save(store_path)
    frame.write.format("sqliteq").mode("append").option("queue", "jobs").save(store_path)
    publish(store_path, rows=10_000)
    (spark.readStream.format("sqliteq").option("path", store_path).option("topic", "in").load()
     .select("value").writeStream.format("sqliteq").option("path", store_path)
     .option("queue", "stream-jobs").option("checkpointLocation", str(tmp_path / "ck"))
     .trigger(availableNow=True).start().awaitTermination())
    with Store(store_path) as store:
        assert_every_n_once([n_of(e.value) for e in store.read("t", 0, 40_000)],
                            30_000)
        for queue, rows in (("jobs", 30_000), ("stream-jobs", 10_000)):
            stats = store.queue(queue).stats()
            assert stats.ready == rows, (queue, stats)


def test_a_batch_read_whose_worker_is_killed_is_retried_on_the_other_with_the_same_rows(
    spark, standalone_cluster, store_path, shared_dir
):
    publish(store_path)
    gate_dir = shared_dir / "gate"
    gate_dir.mkdir()
    typed = (spark.read.format("sqliteq").schema("n LONG").option("path", store_path)
             .option("topic", "in").option("minPartitions", 4).load())
    result: dict = {}
    import threading

    def collect():
        try:
            result["rows"] = [r.n for r in typed.select(gate(spark, gate_dir)("n").alias("n"))
                              .collect()]
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            result["error"] = exc

    reader = threading.Thread(target=collect)
    reader.start()
    index = worker_running_a_gated_task(standalone_cluster, gate_dir)
    kill_worker(standalone_cluster, index)
    (gate_dir / "release").touch()
    reader.join(WAIT_S)
    restart_worker(standalone_cluster, index)
    assert "error" not in result, result.get("error")
    assert_every_n_once(result["rows"])


@pytest.mark.parametrize("sink", ["topic", "queue"])
def test_a_stream_whose_worker_is_killed_mid_batch_sinks_every_row_once(
    spark, standalone_cluster, store_path, shared_dir, tmp_path, sink
):
    publish(store_path, rows=20_000)
    gate_dir = shared_dir / "gate"
    gate_dir.mkdir()
    source = (spark.readStream.format("sqliteq").option("path", store_path)
              .option("topic", "in").option("maxRowsPerTrigger", 5_000).schema("n LONG").load())
    query = (
        source.select(gate(spark, gate_dir, from_n=5_000)("n").alias("n"))
        .selectExpr("to_json(named_struct('n', n)) AS value")
        .writeStream.format("sqliteq").option("path", store_path).option(sink, "out")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True).start()
    )
    try:
        index = worker_running_a_gated_task(standalone_cluster, gate_dir)
        kill_worker(standalone_cluster, index)
        (gate_dir / "release").touch()
        query.awaitTermination(WAIT_S)
        assert query.exception() is None
    finally:
        query.stop()
    restart_worker(standalone_cluster, index)
    assert_every_n_once(sunk(store_path, sink), 20_000)


def sunk(store_path: str, sink: str) -> list[int]:
    """The ``n`` of every row the sink holds, in the topic ``out`` or the queue ``out``."""
    with Store(store_path) as store:
        if sink == "topic":
            events = store.read("out", 0, 1_000_000)
            assert [e.offset for e in events] == list(range(len(events)))
            return [n_of(e.value) for e in events]
        jobs = store.queue("out").claim(1_000_000, lease_ms=60_000)
        return [n_of(job.payload) for job in jobs]


DRIVER = """
import os, sys, time
sys.path.insert(0, {repo!r})
from pyspark.sql.functions import udf
from tests.cluster.standalone import session_builder_for_url
spark = session_builder_for_url({url!r}).appName("sqliteq-cluster-driver").getOrCreate()
gate_dir = {gate_dir!r}

def gate(sink):
    def wait(n):
        if n >= 3000 and not os.path.exists(os.path.join(gate_dir, "release")):
            open(os.path.join(gate_dir, "blocked-" + sink), "w").close()
            while True:
                time.sleep(1)  # until the test kills this driver
        return n
    return udf(wait, "long")

queries = []
for sink in ("topic", "queue"):
    source = (spark.readStream.format("sqliteq").option("path", {store!r}).option("topic", "in")
              .option("maxRowsPerTrigger", 1000).schema("n LONG").load())
    queries.append(
        source.select(gate(sink)("n").alias("n"))
        .selectExpr("to_json(named_struct('n', n)) AS value")
        .writeStream.format("sqliteq").option("path", {store!r}).option(sink, "out")
        .option("checkpointLocation", os.path.join({checkpoints!r}, sink))
        .trigger(availableNow=True).start())
for query in queries:
    query.awaitTermination()
print("RESULT {{}}", flush=True)
"""


def test_a_driver_killed_mid_stream_and_restarted_from_its_checkpoint_sinks_every_row_once(
    standalone_cluster, store_path, shared_dir, tmp_path
):
    """Two queries, into a topic and into a queue: batches 0-2 of each commit; the driver
    is SIGKILLed while batch 3 of both waits at the gate; a new driver on the same
    checkpoints finishes both: every row once in each sink."""
    publish(store_path, rows=6_000)
    gate_dir = shared_dir / "gate"
    gate_dir.mkdir()
    script = drivers.write_script(tmp_path, DRIVER.format(
        repo=str(pathlib.Path(__file__).resolve().parents[2]), url=standalone_cluster.url,
        gate_dir=str(gate_dir), store=store_path, checkpoints=str(tmp_path / "checkpoints")))
    first = drivers.start(script, log=tmp_path / "first.log")
    try:
        wait_for(lambda: all((gate_dir / f"blocked-{sink}").exists() for sink in SINKS)
                 or first.poll() is not None, "batch 3 of both queries at the gate")
        assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    (gate_dir / "release").touch()
    second = subprocess.run([sys.executable, str(script)], env=drivers.driver_env(),
                            capture_output=True, text=True, timeout=WAIT_S)
    assert second.returncode == 0, second.stderr[-3000:]
    for sink in SINKS:
        assert_every_n_once(sunk(store_path, sink), 6_000)
