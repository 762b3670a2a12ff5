"""``python -m benchmarks prune``: a large prune beside a process that publishes.

Fills a store with ``--events`` events (the backlog, 10,000,000 by default), then
prunes all but the newest ``--keep`` of them with ``force`` (``Store.prune``: steps of at
most 10,000 events, one write transaction each) while a second process publishes one
event every ``--every-ms`` ms with the default busy timeout (5 s). Reports the prune's
time, the publisher's publishes, errors (``StoreBusyError``) and its worst and p99
publish latency during the prune: what a writer beside maintenance waits.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

from benchmarks import results
from spark_queue.store import Store

# The publisher process: one event per tick until its stdin closes; then its latencies.
_PUBLISHER = """
import json, sys, threading, time
from spark_queue.errors import StoreBusyError
from spark_queue.store import Store
path, every_s = sys.argv[1], float(sys.argv[2]) / 1000
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
latencies, errors = [], 0
with Store(path) as store:
    print("ready", flush=True)
    tick = time.monotonic()
    while not stop.is_set():
        started = time.perf_counter()
        try:
            store.publish("live", {"n": len(latencies)})
        except StoreBusyError:
            errors += 1
        latencies.append(time.perf_counter() - started)
        tick += every_s
        stop.wait(max(0.0, tick - time.monotonic()))
print(json.dumps({"latencies": latencies, "errors": errors}), flush=True)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=10_000_000, help="the backlog to prune")
    parser.add_argument("--keep", type=int, default=1000, help="newest events kept")
    parser.add_argument("--every-ms", type=float, default=5.0, help="the publisher's period")


def run(args: argparse.Namespace) -> int:
    workdir = tempfile.mkdtemp(prefix="sq-bench-prune-")
    try:
        return _run(args, os.path.join(workdir, "prune.sqlite"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run(args: argparse.Namespace, path: str) -> int:
    started = time.perf_counter()
    with Store(path) as store:
        store.set_housekeeping_interval(0)  # only the prune measured deletes
        store.create_topic("live")
        chunk = 200_000
        for first in range(0, args.events, chunk):
            store.publish_many("backlog", ({"n": n} for n in
                                           range(first, min(args.events, first + chunk))))
    size_mb = os.path.getsize(path) / 2**20
    print(f"filled {args.events:,} events ({size_mb:,.0f} MiB) in "
          f"{time.perf_counter() - started:.1f} s", flush=True)
    publisher = subprocess.Popen(
        [sys.executable, "-c", _PUBLISHER, path, str(args.every_ms)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert publisher.stdout is not None and publisher.stdin is not None
        if publisher.stdout.readline().strip() != "ready":
            raise RuntimeError("the publisher process did not start")
        time.sleep(0.5)  # its first publishes, before the prune
        with Store(path) as store:
            started = time.perf_counter()
            [result] = store.prune("backlog", retention_rows=args.keep, force=True)
            prune_s = time.perf_counter() - started
        time.sleep(0.5)
        publisher.stdin.close()
        report = json.loads(publisher.stdout.read())
    finally:
        if publisher.poll() is None:
            publisher.kill()
        publisher.wait()
    latencies = sorted(report["latencies"])
    p99 = latencies[int(len(latencies) * 0.99)] if latencies else 0.0
    print(f"\nprune beside a publisher ({platform.python_implementation()} "
          f"{platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f})")
    print(f"  deleted {result.deleted:,} events in {prune_s:.1f} s "
          f"({result.deleted / prune_s:,.0f} events/s)")
    print(f"  publisher: {len(latencies):,} publishes, {report['errors']} errors, worst "
          f"{latencies[-1] if latencies else 0:.3f} s, p99 {p99 * 1000:.1f} ms")
    results.record("retention beside a publisher", {
        "events pruned": result.deleted, "prune s, steps of 10,000": round(prune_s, 1),
        "writer's publishes": len(latencies), "publish errors": report["errors"],
        "worst publish s": round(latencies[-1] if latencies else 0.0, 3),
        "p99 publish ms": round(p99 * 1000, 1)})
    return 0 if report["errors"] == 0 else 1
