"""``python -m benchmarks prune``: a large prune beside a process that publishes.

Fills a store with ``--events`` events (the backlog, 10,000,000 by default; each
``{"n": N}``, or ``--event-bytes`` random bytes), then prunes all but the newest
``--keep`` of them with ``force`` (``Topic.prune``: steps of at most 10,000 events and
8 MiB, one write transaction each) while a second process publishes one event every
``--every-ms`` ms with the default busy timeout (5 s). With ``--expired-jobs N`` it
enqueues N jobs whose TTL then passes and measures ``store.housekeeping.sweep_expired()``
(the TTL sweep, in the same steps) instead. Reports the delete's time, the publisher's publishes,
errors (``StoreBusyError``) and its worst and p99 publish latency during it: what a
writer beside maintenance waits.
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
from spark_queue.store import NewJob, Store

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
    parser.add_argument("--event-bytes", type=int, default=0,
                        help="each backlog event this many random bytes (0: small JSON)")
    parser.add_argument("--expired-jobs", type=int, default=0,
                        help="measure the TTL sweep of this many expired jobs instead")


def run(args: argparse.Namespace) -> int:
    workdir = tempfile.mkdtemp(prefix="sq-bench-prune-")
    try:
        return _run(args, os.path.join(workdir, "prune.sqlite"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _fill(args: argparse.Namespace, path: str) -> None:
    started = time.perf_counter()
    with Store(path) as store:
        store.housekeeping.set_interval(0)  # only the delete measured deletes
        store.topic("live").create()
        if args.expired_jobs:
            for first in range(0, args.expired_jobs, 10_000):
                store.queue("expiring").enqueue_many(
                    [NewJob({"n": n}, ttl_ms=1)
                     for n in range(first, min(args.expired_jobs, first + 10_000))])
            what = f"{args.expired_jobs:,} jobs"
        else:
            payload = os.urandom(args.event_bytes) if args.event_bytes else None
            # At most ~64 MiB per transaction: the WAL, not the benchmark, bounds a chunk.
            chunk = max(1, 64 * 2**20 // args.event_bytes) if payload else 200_000
            for first in range(0, args.events, chunk):
                upto = min(args.events, first + chunk)
                store.publish_many("backlog", (payload if payload else {"n": n}
                                               for n in range(first, upto)))
            what = f"{args.events:,} events"
    size_mb = os.path.getsize(path) / 2**20
    print(f"filled {what} ({size_mb:,.0f} MiB) in {time.perf_counter() - started:.1f} s",
          flush=True)


def _run(args: argparse.Namespace, path: str) -> int:
    _fill(args, path)
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
            if args.expired_jobs:
                deleted = store.housekeeping.sweep_expired()
            else:
                [result] = store.topic("backlog").prune(retention_rows=args.keep, force=True)
                deleted = result.deleted
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
    what = "expired jobs" if args.expired_jobs else "events"
    print(f"\n{'TTL sweep' if args.expired_jobs else 'prune'} beside a publisher "
          f"({platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f})")
    print(f"  deleted {deleted:,} {what} in {prune_s:.1f} s ({deleted / prune_s:,.0f} {what}/s)")
    print(f"  publisher: {len(latencies):,} publishes, {report['errors']} errors, worst "
          f"{latencies[-1] if latencies else 0:.3f} s, p99 {p99 * 1000:.1f} ms")
    worst = {"writer's publishes": len(latencies), "publish errors": report["errors"],
             "worst publish s": round(latencies[-1] if latencies else 0.0, 3),
             "p99 publish ms": round(p99 * 1000, 1)}
    if args.expired_jobs:
        results.record("TTL sweep beside a publisher", {
            "expired jobs swept": deleted, "sweep s": round(prune_s, 1), **worst})
    elif args.event_bytes:
        results.record("retention of large events beside a publisher", {
            "events pruned": deleted, "event bytes": args.event_bytes,
            "prune s": round(prune_s, 1), **worst})
    else:
        results.record("retention beside a publisher", {
            "events pruned": deleted, "prune s, steps of 10,000": round(prune_s, 1), **worst})
    return 0 if report["errors"] == 0 else 1
