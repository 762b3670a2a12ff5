"""An ephemeral machine, five times over (issue #49's first acceptance line).

Five runs, each on an empty local folder (the machine's disk): ``sqliteq restore
--if-missing`` from a local S3 server, ``sqliteq replicate``, a producer at ~500 events/s
with ``durability="replicated"`` writing down every acknowledged offset, and a Spark
query streaming the topic into a parquet table whose checkpoint lives beside it on the
storage that survives; then every process is SIGKILLed at once and the local folder is
deleted. After a final drain: every acknowledged event is in the table exactly once,
no event twice, and no offset names two different events.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.end_to_end import drivers
from tests.replication.machine import lose_machine

pytestmark = pytest.mark.slow

RUNS = 5
TOPIC = "events"

PRODUCER = """
import sys, time
from collections import deque
from spark_queue.store import Producer

store, acks, run, rate = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
pending = deque()
with Producer(store, durability="replicated") as producer, open(acks, "a") as out:
    start = time.monotonic()
    sent = 0
    while True:
        due = int((time.monotonic() - start) * rate)
        while sent < due:
            value = f"{run}-{sent}"
            pending.append((value, producer.publish_nowait("events", value)))
            sent += 1
        while pending and pending[0][1].done():
            value, future = pending.popleft()
            out.write(f"{future.result()}\\t{value}\\n")
            out.flush()
        time.sleep(0.002)
"""

QUERY = """
import json, sys
from pyspark.sql import SparkSession
import spark_queue

store, table, checkpoint, mode = sys.argv[1:5]
spark = (SparkSession.builder.master("local[1]").appName("ephemeral")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
         .getOrCreate())
spark_queue.register(spark)
rows = (spark.readStream.format("sqliteq").option("path", store).option("topic", "events")
        .option("startingOffsets", "earliest").load()
        .selectExpr("offset", "CAST(value AS STRING) AS value"))
writer = rows.writeStream.format("parquet").option("path", table) \\
    .option("checkpointLocation", checkpoint)
if mode == "drain":
    writer.trigger(availableNow=True).start().awaitTermination()
    seen = [[r.offset, r.value] for r in spark.read.parquet(table).collect()]
    print("RESULT " + json.dumps(seen), flush=True)
else:
    query = writer.trigger(processingTime="200 milliseconds").start()
    print("STARTED", flush=True)
    query.awaitTermination()
"""


def _sqliteq(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spark_queue", *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def _lines(path: pathlib.Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _commits(checkpoint: pathlib.Path) -> int:
    folder = checkpoint / "commits"
    return len([p for p in folder.iterdir() if p.name.isdigit()]) if folder.is_dir() else 0


def _wait_until(condition, what: str, procs: list[subprocess.Popen], timeout_s: float = 180):
    deadline = time.monotonic() + timeout_s
    while not condition():
        for proc in procs:
            assert proc.poll() is None, f"{what}: {proc.args} exited with {proc.returncode}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _start(args: list[str], env: dict[str, str], log: pathlib.Path) -> subprocess.Popen:
    with open(log, "a") as sink:
        return subprocess.Popen(args, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _kill_all(procs: list[subprocess.Popen]) -> None:
    # At once, Litestream (a session of its own) included: the machine is gone.
    lose_machine(procs)
    for proc in procs:
        drivers.kill_group(proc)


def test_an_ephemeral_machine_five_times_over_loses_and_repeats_nothing(tmp_path, s3_env):
    local = tmp_path / "local"  # the machine's disk: deleted after every run
    volume = tmp_path / "volume"  # what survives: the table, its checkpoint, the acks
    volume.mkdir()
    store = str(local / "app.sqlite")
    url = f"s3://replicas/{tmp_path.name}"
    table, checkpoint, acks = volume / "table", volume / "checkpoint", volume / "acks.tsv"
    env = drivers.driver_env()
    producer = drivers.write_script(tmp_path, PRODUCER, "producer.py")
    query = drivers.write_script(tmp_path, QUERY, "query.py")
    logs = tmp_path / "logs"
    logs.mkdir()
    for run in range(RUNS):
        local.mkdir()
        done = _sqliteq("restore", store, "--from", url, "--if-missing", env=env)
        assert done.returncode == 0, done.stderr
        acked_before, commits_before = len(_lines(acks)), _commits(checkpoint)
        procs = [_start([sys.executable, "-m", "spark_queue", "replicate", store, "--to", url,
                         "--sync-interval", "200ms"], env, logs / f"replicate{run}.log")]
        try:
            # Writers start once the replicator says the store is marked (docs/replication.md):
            # a connection opened before keeps SQLite's autocheckpoint (issue 58, point 2).
            _wait_until(lambda r=run: "replicating" in "".join(_lines(logs / f"replicate{r}.log")),
                        "the replicator's ready line", procs)
            procs.append(_start([sys.executable, str(producer), store, str(acks), str(run), "500"],
                                env, logs / f"producer{run}.log"))
            _wait_until(lambda n=acked_before: len(_lines(acks)) > n, "a first acknowledgement",
                        procs)
            procs.append(_start([sys.executable, str(query), store, str(table), str(checkpoint),
                                 "stream"], env, logs / f"query{run}.log"))
            _wait_until(lambda c=commits_before, n=acked_before: _commits(checkpoint) >= c + 1
                        and len(_lines(acks)) >= n + 500, "the query's batches", procs)
        finally:
            _kill_all(procs)
        shutil.rmtree(local)
    local.mkdir()
    assert _sqliteq("restore", store, "--from", url, env=env).returncode == 0
    replicator = _start([sys.executable, "-m", "spark_queue", "replicate", store, "--to", url],
                        env, logs / "replicate-drain.log")
    try:
        # The restored mark may trail the replica by a cycle: the replicator's first cycle
        # moves it to everything restored, which holds every acknowledged event.
        from spark_queue.store import replica_status

        _wait_until(lambda: (s := replica_status(store)) is not None and s.cycle_done > 0
                    and not any(s.behind.values()), "the mark", [replicator])
        drained = drivers.run(query, store, str(table), str(checkpoint), "drain", env=env,
                              timeout=240)
    finally:
        replicator.send_signal(signal.SIGTERM)
        replicator.wait(60)
    rows = [tuple(row) for row in drained.result()]
    acked = [tuple(line.split("\t")) for line in _lines(acks)]
    acked = [(int(offset), value) for offset, value in acked]
    assert len(acked) >= RUNS * 500
    by_offset: dict[int, set[str]] = {}
    for offset, value in [*rows, *acked]:
        by_offset.setdefault(offset, set()).add(value)
    assert {o: v for o, v in by_offset.items() if len(v) > 1} == {}  # no offset names two events
    assert len(rows) == len(set(rows)), "an event is in the table twice"
    assert len({v for _, v in rows}) == len(rows), "an event is in the table twice"
    missing = set(acked) - set(rows)
    assert not missing, f"{len(missing)} acknowledged events are not in the table"
    print(json.dumps({"acked": len(acked), "rows": len(rows)}))
