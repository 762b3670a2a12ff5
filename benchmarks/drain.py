"""``python -m benchmarks drain``: what draining a backlog in bounded batches costs.

Three ways to read a backlog of ``--rows`` events into Spark's ``noop`` sink,
side by side in one session: ``run_available_now`` with ``maxRowsPerTrigger``
(on pyspark 4.0/4.1 one query start per batch, on 4.2+ one start), a
processing-time query with the same cap stopped once it has caught up (the
alternative on 4.0/4.1: one start, the caller decides when it is done), and one
uncapped ``availableNow`` run (one batch of everything: the floor). Reports
wall-clock rows/s, ratios against the floor, and seconds per query start.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from benchmarks.report import local_session, print_table
from spark_queue.store import Store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=10_000, help="backlog size")
    parser.add_argument("--max-rows", type=int, default=1000, help="maxRowsPerTrigger")
    parser.add_argument("--repeats", type=int, default=2, help="best of N for each path")
    parser.add_argument("--cores", type=int, default=2, help="local[N] for Spark")


def run(args: argparse.Namespace) -> int:
    workdir = tempfile.mkdtemp(prefix="sq-bench-drain-")
    try:
        return _run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run(args: argparse.Namespace, workdir: str) -> int:
    import pyspark

    from spark_queue.spark import run_available_now

    spark = local_session("spark_queue-bench-drain", args.cores)
    store_path = os.path.join(workdir, "bench.sqlite")
    with Store(store_path) as store:
        store.publish_many("events", [{"n": n, "pad": "x" * 80} for n in range(args.rows)])
    checkpoints = iter(range(10**6))

    def writer(max_rows: int | None):
        reader = spark.readStream.format("sqliteq").option("path", store_path)
        reader = reader.option("topic", "events")
        if max_rows is not None:
            reader = reader.option("maxRowsPerTrigger", max_rows)
        return reader.load().writeStream.format("noop").option(
            "checkpointLocation", os.path.join(workdir, f"ckpt-{next(checkpoints)}"))

    best: dict[str, float] = {}
    starts: dict[str, int] = {}

    def record(label: str, seconds: float, runs: int) -> None:
        if args.rows / seconds > best.get(label, 0.0):
            best[label], starts[label] = args.rows / seconds, runs

    for _ in range(args.repeats):
        started = time.perf_counter()
        drained = run_available_now(writer(args.max_rows))
        record("run_available_now, capped", time.perf_counter() - started, drained.runs)

        started = time.perf_counter()
        query = writer(args.max_rows).trigger(processingTime="0 seconds").start()
        query.processAllAvailable()
        query.stop()
        record("processing time, capped, stop when caught up", time.perf_counter() - started, 1)

        started = time.perf_counter()
        query = writer(None).trigger(availableNow=True).start()
        query.awaitTermination()
        record("availableNow, uncapped (one batch)", time.perf_counter() - started, 1)

    floor = "availableNow, uncapped (one batch)"
    print_table(f"drain {args.rows:,} rows, maxRowsPerTrigger={args.max_rows:,}, "
                f"pyspark {pyspark.__version__}, wall clock",
                [(label, rate, floor) for label, rate in best.items()])
    for label, rate in best.items():
        print(f"  {label}: {starts[label]} query start(s), "
              f"{args.rows / rate / starts[label]:.2f} s per start")
    spark.stop()
    return 0
