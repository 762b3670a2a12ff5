"""``python -m benchmarks unattended``: an edge box left alone, with no prune command.

The soak (:mod:`benchmarks.soak`) prunes every sample; this run never does.

Topic ``readings`` keeps ``--retention-s`` seconds (60 by default) and nothing prunes it:
the store's housekeeping does, run by the processes on the store. Three processes, each
restarted when killed:

- a producer (a ``Producer``) publishing ``--rate`` events/s (2,000 by default);
- a Spark driver with two queries on ONE source DataFrame read with ``consumer=bronze``
  (the ordinary fan-out of Structured Streaming, issue #55): ``bronze``, the topic into a
  Delta table (exactly once: Delta's streaming sink and the checkpoint), and ``feed``,
  every tenth reading into queue ``jobs`` through ``format("sqliteq")``; each query holds
  retention at its own position under the one name;
- a ``sqliteq worker`` draining ``jobs``.

Every ``--kill-min-s``..``--kill-max-s`` seconds (uniformly drawn, seeded) one of the
three, in turn, is SIGKILLed and started again. Every ``--sample-s`` seconds: the events
the topic holds beside the retention window's (rate x retention), the file and WAL sizes,
the lag of the slowest and the fastest position under ``bronze``. At the end the producer
stops, the driver catches up and counts the Delta table (every offset the topic ever had
must be there exactly once), and the worker drains the queue (every tenth offset must be
a done job, once).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

from benchmarks import results
from benchmarks.children import Children, in_work_dir
from spark_queue.store import Store

_PRODUCER = """
import sys, time
from spark_queue.store import Producer
path, rate = sys.argv[1], int(sys.argv[2])
with Producer(path, busy_timeout_ms=30_000) as producer:
    started, sent = time.monotonic(), 0
    while True:
        for future in [producer.publish_nowait("readings", {"device": f"d{i % 50}",
                                                             "celsius": 20 + i % 15})
                       for i in range(sent, sent + 100)]:
            future.result()
        sent += 100
        ahead = sent / rate - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)
"""

_DRIVER = """
import json, os, sys, time
from spark_queue.spark.session import get_or_create
path, work = sys.argv[1], sys.argv[2]
spark = get_or_create("spark_queue unattended", delta=True)
spark.sparkContext.setLogLevel("ERROR")
readings = (spark.readStream.format("sqliteq").option("path", path).option("topic", "readings")
            .option("consumer", "bronze").option("startingOffsets", "earliest")
            .option("maxRowsPerTrigger", 20000).load())
bronze = (readings.select("offset", "value").writeStream.format("delta")
          .option("checkpointLocation", os.path.join(work, "bronze-checkpoint"))
          .trigger(processingTime="1 second").start(os.path.join(work, "bronze")))
feed = (readings.where("offset % 10 = 0").selectExpr("value").writeStream.format("sqliteq")
        .option("path", path).option("queue", "jobs")
        .option("checkpointLocation", os.path.join(work, "feed-checkpoint"))
        .trigger(processingTime="1 second").start())
stop = os.path.join(work, "stop")
while not os.path.exists(stop):
    for query in (bronze, feed):
        if query.exception() is not None:
            raise query.exception()
    time.sleep(0.5)
bronze.processAllAvailable()
feed.processAllAvailable()  # every tenth reading enqueued before the count
table = spark.read.format("delta").load(os.path.join(work, "bronze"))
row = table.selectExpr("count(*) AS n", "count(DISTINCT offset) AS d", "min(offset) AS lo",
                       "max(offset) AS hi").first()
with open(os.path.join(work, "summary.json"), "w") as f:
    json.dump(row.asDict(), f)
bronze.stop()
feed.stop()
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--minutes", type=float, default=8.0)
    parser.add_argument("--rate", type=int, default=2000, help="events per second")
    parser.add_argument("--retention-s", type=float, default=60.0, help="the topic's retention")
    parser.add_argument("--kill-min-s", type=float, default=45.0,
                        help="SIGKILL and restart one of the three processes every "
                             "KILL_MIN_S..KILL_MAX_S seconds (uniformly drawn)")
    parser.add_argument("--kill-max-s", type=float, default=90.0)
    parser.add_argument("--seed", type=int, default=55, help="of the kill intervals")
    parser.add_argument("--drain-s", type=float, default=300.0,
                        help="how long the worker may take to drain the queue at the end")
    parser.add_argument("--sample-s", type=float, default=30.0)


def run(args: argparse.Namespace) -> int:
    return in_work_dir("sq-unattended-", lambda work: _run(args, work))


def _run(args: argparse.Namespace, work: str) -> int:
    path = os.path.join(work, "edge.sqlite")
    with Store(path) as store:
        store.topic("readings").configure(retention_ms=round(args.retention_s * 1000))
        store.queue("jobs").configure()  # created now: the worker may start first
    commands = {
        "producer": [sys.executable, "-c", _PRODUCER, path, str(args.rate)],
        "driver": [sys.executable, "-c", _DRIVER, path, work],
        "worker": [sys.executable, "-m", "spark_queue", "worker", path,
                   "benchmarks.soak:noop_handler", "--queue", "jobs", "--batch-size", "64"],
    }
    procs = Children(work, commands)
    window = args.rate * args.retention_s
    draw = random.Random(args.seed)

    def kill_gap() -> float:
        return draw.uniform(args.kill_min_s, args.kill_max_s)

    print(f"retention {args.retention_s:g} s at {args.rate:,}/s: a window of {window:,.0f} events; "
          f"a kill every {args.kill_min_s:g}-{args.kill_max_s:g} s (producer, driver, worker in "
          f"turn); load {os.getloadavg()[0]:.1f}", flush=True)
    columns = ("t_s", "latest", "events", "x_window", "slow_lag", "fast_lag", "jobs", "file_mb",
               "wal_mb", "killed")
    print(" ".join(f"{c:>10}" for c in columns), flush=True)
    samples: list[dict] = []
    kills: list[str] = []
    started = time.monotonic()
    next_kill, next_sample = started + kill_gap(), started + args.sample_s
    try:
        with Store(path) as store:
            while time.monotonic() - started < args.minutes * 60:
                time.sleep(0.2)
                for name, code in procs.exited().items():
                    raise RuntimeError(f"the {name} exited by itself ({code}); see {name}.log")
                if time.monotonic() >= next_kill:
                    victim = ("producer", "driver", "worker")[len(kills) % 3]
                    procs.kill(victim)
                    kills.append(victim)
                    next_kill += kill_gap()
                if time.monotonic() >= next_sample:
                    next_sample += args.sample_s
                    samples.append(_sample(store, path, started, window, kills))
                    print(" ".join(f"{samples[-1][c]:>10}" for c in columns), flush=True)
            procs.kill("producer", restart=False)
            latest = store.topic("readings").bounds()[1]
            last_run = store.housekeeping.status().last_run
        with open(os.path.join(work, "stop"), "w"):
            pass
        procs.wait("driver", 900)
        with open(os.path.join(work, "summary.json")) as f:
            delta = json.load(f)
        jobs_wanted = (latest + 9) // 10  # offsets 0, 10, 20, ... below latest
        done, drained = _drain(path, jobs_wanted, args.drain_s)
    finally:
        procs.close()
    exact = delta["n"] == delta["d"] == latest and delta["lo"] == 0 and delta["hi"] == latest - 1
    jobs_exact = done == jobs_wanted and drained
    lost = sum(_count(os.path.join(work, f"{name}.log"), "DataLossError") for name in commands)
    late = samples[len(samples) // 2:]
    print(f"\nsummary: {latest:,} events published in {args.minutes:g} min; kills: "
          f"{', '.join(kills)}")
    print(f"  topic at the end: {samples[-1]['events']:,} events = {samples[-1]['x_window']}x the "
          f"window (largest {max(s['x_window'] for s in samples)}x)")
    print(f"  file: {samples[len(samples) // 2]['file_mb']} MB at the middle, "
          f"{samples[-1]['file_mb']} MB at the end, {max(s['file_mb'] for s in late)} MB at "
          f"most in the second half; WAL at most {max(s['wal_mb'] for s in samples)} MB")
    print(f"  Delta: {delta['n']:,} rows, {delta['d']:,} distinct offsets, {delta['lo']}.."
          f"{delta['hi']}: {'every event exactly once' if exact else 'NOT exactly once'}")
    print(f"  queue: {done:,} jobs done of {jobs_wanted:,} (every tenth offset), queue "
          f"{'drained' if drained else 'NOT drained'}: "
          f"{'every tenth event a done job, once' if jobs_exact else 'NOT exact'}")
    print(f"  DataLossError in the logs: {lost}")
    print(f"  last housekeeping run: {last_run}")
    middle_mb = samples[len(samples) // 2]["file_mb"]
    results.record("an edge box with no prune command", {
        "published events/s (setting)": args.rate, "events published": latest,
        "kills": len(kills), "topic held / retention window, at the end": samples[-1]["x_window"],
        "topic held / retention window, at most": max(s["x_window"] for s in samples),
        "file MB, middle and end": [middle_mb, samples[-1]["file_mb"]],
        "file end / middle": round(samples[-1]["file_mb"] / middle_mb, 2),
        "WAL MB at most": max(s["wal_mb"] for s in samples),
        "Delta rows, distinct offsets": [delta["n"], delta["d"]],
        "every event exactly once": "yes" if exact else "NO",
        "two queries on one source DataFrame, one consumer": "yes",
        "jobs done, wanted (every tenth event)": [done, jobs_wanted],
        "every tenth event a done job": "yes" if jobs_exact else "NO",
        "DataLossError in the logs": lost})
    return 0 if exact and jobs_exact and lost == 0 else 1


def _drain(path: str, wanted: int, timeout_s: float) -> tuple[int, bool]:
    """Wait (the worker still running) until the queue is empty and ``wanted`` jobs are done;
    ``(jobs acked, drained)``. A job the killed worker held comes back after its lease."""
    deadline = time.monotonic() + timeout_s
    with Store(path) as store:
        queue = store.queue("jobs")
        while True:
            stats, done = queue.stats(), queue.counters().acked
            empty = stats.ready + stats.leased + stats.delayed == 0
            if (empty and done >= wanted) or time.monotonic() > deadline:
                return done, empty
            time.sleep(1)


def _count(log: str, text: str) -> int:
    if not os.path.exists(log):
        return 0
    with open(log, errors="replace") as f:
        return sum(line.count(text) for line in f)


def _sample(store: Store, path: str, started: float, window: float, kills: list[str]) -> dict:
    earliest, latest = store.topic("readings").bounds()
    # One position per query under the one name: the slower holds retention.
    held = [p.next_offset for p in store.consumer_positions("readings") if p.consumer == "bronze"]
    saved = store.committed_offsets("bronze").get("readings", 0)
    stats = store.queue("jobs").stats()
    wal = path + "-wal"
    return {
        "t_s": round(time.monotonic() - started), "latest": latest,
        "events": latest - earliest, "x_window": round((latest - earliest) / window, 2),
        "slow_lag": latest - min(held, default=saved),
        "fast_lag": latest - max(held, default=saved), "jobs": stats.ready + stats.leased,
        "file_mb": round(os.path.getsize(path) / 2**20, 1),
        "wal_mb": round(os.path.getsize(wal) / 2**20 if os.path.exists(wal) else 0.0, 1),
        "killed": kills[-1] if kills else "-",
    }
