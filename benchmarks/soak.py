"""Soak run: steady publishing, a running Spark query, workers and retention, for minutes.

Not a test: ``python -m benchmarks soak --minutes 10``. Every
``--sample-s`` seconds it records the driver's, the JVM's and the worker
process's resident memory, the JVM heap still in use after a full GC, the
store's size on disk (file + WAL), the query's lag and the queue's depth; at
the end it prints the samples and a summary of first, last and largest
values, the figures BENCHMARKS.md reports.

Pipeline: a producer thread publishes ``--rate`` events/s to topic ``soak``;
Spark streams it (``consumer=soak``) into queue ``soak-jobs`` through
``format("sqliteq")``; one ``sqliteq worker`` process acks the jobs; every
sample, retention keeps the newest ``--keep-rows`` events of the topic
(never above the consumer's saved offset).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from benchmarks import results
from spark_queue.store import Store


def noop_handler(job) -> None:
    """The soak worker's handler: the work itself is not what is measured."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=500, help="events per second")
    parser.add_argument("--keep-rows", type=int, default=20_000, help="retention per topic")
    parser.add_argument("--sample-s", type=float, default=30.0)


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def jvm_heap_after_gc_mb(spark) -> float:
    """Heap the driver JVM still holds after a full GC: a leak shows here first.

    RSS only follows the heap's high-water mark, which the JVM grows toward
    ``spark.driver.memory`` and rarely gives back, so RSS alone cannot tell
    growth from retention.
    """
    memory = spark._jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
    memory.gc()
    return memory.getHeapMemoryUsage().getUsed() / 2**20


def java_children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read()
        except OSError:
            continue
        if parent == pid and b"java" in command:
            found.append(int(entry))
    return found


def run(args: argparse.Namespace) -> int:
    from spark_queue.spark.session import get_or_create

    workdir = tempfile.mkdtemp(prefix="sq-soak-")
    path = os.path.join(workdir, "soak.sqlite")
    with Store(path) as store:
        store.topic("soak").create()
    stop = threading.Event()
    published = [0]

    def produce() -> None:
        with Store(path, busy_timeout_ms=30_000) as store:
            started = time.monotonic()
            while not stop.is_set():
                store.publish_many("soak", [{"n": published[0] + i, "pad": "x" * 80}
                                            for i in range(50)])
                published[0] += 50
                ahead = published[0] / args.rate - (time.monotonic() - started)
                if ahead > 0:
                    stop.wait(ahead)

    spark = get_or_create("spark_queue soak", delta=False)
    spark.sparkContext.setLogLevel("ERROR")
    query = (
        spark.readStream.format("sqliteq").option("path", path).option("topic", "soak")
        .option("consumer", "soak").option("maxRowsPerTrigger", args.rate * 10).load()
        .selectExpr("value")
        .writeStream.format("sqliteq").option("path", path).option("queue", "soak-jobs")
        .option("checkpointLocation", os.path.join(workdir, "checkpoint"))
        .trigger(processingTime="1 second").start()
    )
    worker = subprocess.Popen(
        # --create: the queue exists once the sink's first batch lands, after the worker starts.
        [sys.executable, "-m", "spark_queue", "worker", path, "benchmarks.soak:noop_handler",
         "--queue", "soak-jobs", "--create", "--batch-size", "64"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    samples = []
    started = time.monotonic()
    columns = (("t_s", 6), ("published", 10), ("lag", 7), ("queue", 6), ("file_mb", 8),
               ("driver_mb", 9), ("jvm_mb", 7), ("jvm_heap_mb", 11), ("worker_mb", 9))
    print(" ".join(f"{key:>{width}}" for key, width in columns), flush=True)
    try:
        with Store(path) as store:
            while time.monotonic() - started < args.minutes * 60:
                time.sleep(args.sample_s)
                store.topic("soak").prune(retention_rows=args.keep_rows)
                latest = store.topic("soak").latest_offset()
                saved = store.committed_offsets("soak").get("soak", 0)
                stats = store.queue("soak-jobs").stats()
                size = sum(os.path.getsize(path + s) for s in ("", "-wal") if
                           os.path.exists(path + s)) / 2**20
                sample = {
                    "t_s": round(time.monotonic() - started), "published": published[0],
                    "lag": latest - saved, "queue": stats.ready + stats.leased,
                    "file_mb": round(size, 1), "driver_mb": round(rss_mb(os.getpid())),
                    "jvm_mb": round(sum(rss_mb(p) for p in java_children(os.getpid()))),
                    "jvm_heap_mb": round(jvm_heap_after_gc_mb(spark)),
                    "worker_mb": round(rss_mb(worker.pid)),
                }
                samples.append(sample)
                print(" ".join(f"{sample[k]:>{w}}" for k, w in columns), flush=True)
                error = query.exception()
                if error is not None:
                    raise error
    finally:
        stop.set()
        query.stop()
        worker.terminate()
        worker.wait(timeout=60)
        shutil.rmtree(workdir, ignore_errors=True)
    print("\nsummary (first / last / max):")
    figures: dict[str, results.Figure] = {}
    for key, _ in columns[2:]:  # every sampled figure but the clock and the running count
        values = [s[key] for s in samples]
        print(f"  {key:<10} {values[0]:>8} / {values[-1]:>8} / {max(values):>8}")
        figures[f"{key}: first, last, max"] = [values[0], values[-1], max(values)]
    minutes = (time.monotonic() - started) / 60
    print(f"  published {published[0]:,} events in {minutes:.1f} min "
          f"({published[0] / (minutes * 60):,.0f}/s)")
    figures["published events"] = published[0]
    figures["minutes"] = round(minutes, 1)
    # Every sixth sample and the last, the rows BENCHMARKS.md's table shows.
    for sample in [*samples[5::6], samples[-1]] if samples else []:
        figures[f"sample at {sample['t_s']} s"] = [sample[k] for k, _ in columns[1:]]
    results.record("soak", figures)
    return 0
