"""``python -m benchmarks replica``: what replication (Litestream, ``sqliteq replicate``) costs
and what it keeps.

Sections (``--section``, default all but soak):

- ``throughput``: ``publish_many`` (batches of 1,000) with no replicator, then with one
  running (default durability), in the same run; single ``Store.publish`` p50/p99 with
  ``durability="replicated"``.
- ``sink``: the Spark sink (a streaming query writing ``--sink-files`` micro-batches of
  ``--sink-rows`` rows each into a fresh store) with no replicator, with one running
  (default durability) and with ``durability="replicated"``, interleaved in
  ``--sink-rounds`` rounds: the median of the per-round ratios.
- ``kills``: ``--kills`` times: a replicator and a producer (default durability, ~500
  events/s, every acknowledgement written down with its time) SIGKILLed together after a
  random 2-5 s, the local folder deleted, the store restored: the acknowledged events the
  restore lacks, as seconds before the kill; every restored file through ``check``.
- ``soak``: ``--minutes`` at ``--rate`` events/s with a replicator beside a Producer (its
  housekeeping on): the WAL, the local LTX folder and the replica sampled every 10 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable

from spark_queue.replication import replicate, restore
from spark_queue.store import Producer, Store, check_file, replica_status

_PRODUCER = r"""
import sys, time
from collections import deque
from spark_queue.store import Producer
store, acks, rate = sys.argv[1], sys.argv[2], float(sys.argv[3])
pending = deque()
with Producer(store) as producer, open(acks, "w") as out:
    start = time.monotonic(); sent = 0
    while True:
        due = int((time.monotonic() - start) * rate)
        while sent < due:
            pending.append(producer.publish_nowait("events", sent)); sent += 1
        while pending and pending[0].done():
            out.write(f"{pending.popleft().result()} {time.time()}\n")
        out.flush()
        time.sleep(0.002)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--section", choices=("throughput", "sink", "kills", "soak", "all"),
                        default="all", help="what to measure (all: throughput and kills)")
    parser.add_argument("--kills", type=int, default=20, help="kills in the kills section")
    parser.add_argument("--minutes", type=float, default=10.0, help="the soak's length")
    parser.add_argument("--rate", type=float, default=2000.0, help="the soak's events/s")
    parser.add_argument("--sink-rounds", type=int, default=5, help="rounds of the sink section")
    parser.add_argument("--sink-files", type=int, default=10,
                        help="micro-batches per sink run (one input file each)")
    parser.add_argument("--sink-rows", type=int, default=20_000, help="rows per micro-batch")


def run(args: argparse.Namespace) -> int:
    work = tempfile.mkdtemp(prefix="sq-bench-replica-")
    try:
        if args.section in ("throughput", "all"):
            _throughput(work)
        if args.section in ("kills", "all"):
            _kills(work, args.kills)
        if args.section == "sink":
            _sink(work, args.sink_rounds, args.sink_files, args.sink_rows)
        if args.section == "soak":
            _soak(work, args.minutes, args.rate)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


class _Running:
    """A replicator in a thread, for the length of a with-block."""

    def __init__(self, store: str, url: str) -> None:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=replicate, args=(store, url),
                                       kwargs={"stop": self.stop})

    def __enter__(self) -> _Running:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def _publish_many_rate(store: str, batches: int) -> float:
    payload = [{"i": i, "pad": "x" * 100} for i in range(1000)]
    with Store(store) as s:
        start = time.perf_counter()
        for _ in range(batches):
            s.publish_many("events", payload)
        return batches * 1000 / (time.perf_counter() - start)


def _throughput(work: str) -> None:
    plain, replicated = os.path.join(work, "plain.sqlite"), os.path.join(work, "repl.sqlite")
    url = f"file://{work}/replica-throughput"
    rounds = []
    for _ in range(3):  # interleaved, so both see the same machine
        without = _publish_many_rate(plain, 200)
        with _Running(replicated, url):
            time.sleep(0.5)
            with_replication = _publish_many_rate(replicated, 200)
        rounds.append((without, with_replication))
    for without, with_replication in rounds:
        print(f"publish_many (1,000 per call): {without:,.0f} events/s without replication, "
              f"{with_replication:,.0f} with ({with_replication / without:.2f}x)")
    best = max(w for _, w in rounds) / max(w for w, _ in rounds)
    print(f"publish_many best of 3: {best:.2f}x with replication on")
    # Each path that waits for the replica at the commit door, against the same path on a
    # store without replication, interleaved: a call returns once a cycle (two small
    # transactions and `litestream sync -wait`) has shipped its commit.
    rows: list[dict[str, object]] = [{"i": i, "pad": "x" * 100} for i in range(1000)]
    paths: dict[str, Callable[[Store, int], object]] = {
        "Store.publish": lambda s, i: s.publish("single", i),
        "publish_many (1,000 per call)": lambda s, i: s.publish_many("many", rows),
        "store.transaction() (a row, an event, a job)": _outbox_transaction,
    }
    for name, call in paths.items():
        off_ms: list[float] = []
        on_ms: list[float] = []
        with _Running(replicated, url):
            _wait_marked(replicated)
            with Store(plain) as p, Store(replicated, durability="replicated") as r:
                _prepare(p)
                _prepare(r)
                for i in range(60):
                    for store, took in ((p, off_ms), (r, on_ms)):
                        start = time.perf_counter()
                        call(store, i)
                        took.append((time.perf_counter() - start) * 1000)
        print(f"{name}: p50 {statistics.median(off_ms):.2f} ms without replication, "
              f"{statistics.median(on_ms):.1f} ms with durability='replicated' (p99 "
              f"{sorted(on_ms)[int(len(on_ms) * 0.99) - 1]:.1f} ms): "
              f"{statistics.median(off_ms) / statistics.median(on_ms):.3f}x")


def _prepare(store: Store) -> None:
    store.conn.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, total INT)")
    store.queue("emails")


def _outbox_transaction(store: Store, i: int) -> None:
    with store.transaction() as tx:
        tx.execute("INSERT INTO orders (total) VALUES (?)", (i,))
        tx.publish("orders", {"order": i})
        tx.enqueue("emails", {"order": i})


def _sink(work: str, rounds: int, files: int, rows: int) -> None:
    """The sink's cost of a replicator beside it: the same input, streamed into a fresh store
    per run, as ``files`` micro-batches (``maxFilesPerTrigger=1``)."""
    import spark_queue
    from benchmarks.report import in_batch_seconds, local_session

    spark = local_session("replica sink bench", 2)
    spark_queue.register(spark)
    input_dir = os.path.join(work, "sink-input")
    # One input file per micro-batch, ~100-byte values.
    spark.range(0, files * rows, 1, files).selectExpr(
        "concat(lpad(CAST(id AS STRING), 10, '0'), '-', repeat('x', 89)) AS value"
    ).write.parquet(input_dir)
    schema = spark.read.parquet(input_dir).schema
    runs = iter(range(1_000_000))

    def stream(replicated: bool, durability: str) -> tuple[float, float]:
        n = next(runs)
        store = os.path.join(work, f"sink{n}.sqlite")
        replica = f"file://{work}/sink-replica{n}"
        with contextlib.ExitStack() as stack:
            if replicated:
                stack.enter_context(_Running(store, replica))
                _wait_marked(store)
            # Spark looks a Python data source up in the calling JVM thread's active
            # session, which a py4j thread of its own may lack beside a Python thread.
            spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
            started = time.perf_counter()
            query = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
                     .parquet(input_dir).writeStream.format("sqliteq")
                     .option("path", store).option("createStore", "true")
                     .option("topic", "bench")
                     .option("durability", durability)
                     .option("checkpointLocation", os.path.join(work, f"sink-ck{n}"))
                     .trigger(availableNow=True).start())
            query.awaitTermination()
            elapsed = time.perf_counter() - started
            in_batches = in_batch_seconds(json.loads(p.json) for p in query.recentProgress)
        with Store(store) as s:
            assert s.topic("bench").latest_offset() == files * rows, store
        return elapsed, in_batches

    stream(False, "normal")  # warm-up: Spark's first query plans slowly
    results: dict[str, list[tuple[float, float]]] = {"off": [], "on": [], "replicated": []}
    for _ in range(rounds):  # interleaved, so all three see the same machine
        results["off"].append(stream(False, "normal"))
        results["on"].append(stream(True, "normal"))
        results["replicated"].append(stream(True, "replicated"))
    spark.stop()
    total = files * rows
    for r in range(rounds):
        off, on, repl = (results[k][r] for k in ("off", "on", "replicated"))
        print(f"round {r + 1}: sink {total / off[0]:,.0f} events/s without replication, "
              f"{total / on[0]:,.0f} with ({off[0] / on[0]:.2f}x; in batches "
              f"{off[1] / on[1]:.2f}x), durability='replicated' {total / repl[0]:,.0f} "
              f"({off[0] / repl[0]:.2f}x)")
    for label, key in (("replicator running", "on"), ("durability='replicated'", "replicated")):
        wall = statistics.median(off[0] / w[0] for off, w in zip(
            results["off"], results[key], strict=True))
        batches = statistics.median(off[1] / w[1] for off, w in zip(
            results["off"], results[key], strict=True))
        print(f"sink ({files} micro-batches of {rows:,} rows), {label}: median of "
              f"{rounds} rounds {wall:.2f}x end to end, {batches:.2f}x in batches")


def _wait_marked(store: str, timeout_s: float = 60.0) -> None:
    """Until the replicator has marked the store replicated (its readers capped from then)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if os.path.exists(store) and replica_status(store) is not None:
            return
        time.sleep(0.05)
    raise RuntimeError(f"the replicator did not mark {store} in {timeout_s:g} s")


def _kills(work: str, kills: int) -> None:
    script = os.path.join(work, "producer.py")
    with open(script, "w", encoding="utf-8") as out:
        out.write(_PRODUCER)
    url = f"file://{work}/replica-kills"
    losses, lost_events, checked = [], 0, 0
    for kill in range(kills):
        local = os.path.join(work, "local")
        store = os.path.join(local, "app.sqlite")
        os.makedirs(local)
        restore(store, url, if_missing=True)
        acks = os.path.join(work, f"acks{kill}.txt")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        procs = [subprocess.Popen([sys.executable, "-m", "spark_queue", "replicate", store,
                                   "--to", url], env=env, start_new_session=True,
                                  stderr=subprocess.DEVNULL)]
        time.sleep(1.0)
        procs.append(subprocess.Popen([sys.executable, script, store, acks, "500"], env=env,
                                      start_new_session=True))
        time.sleep(random.uniform(2.0, 5.0))
        killed_at = time.time()
        for proc in procs:
            os.killpg(proc.pid, signal.SIGKILL)
        for proc in procs:
            proc.wait()
        shutil.rmtree(local)
        os.makedirs(local)
        restore(store, url)
        report = check_file(store)
        checked += report.ok
        with Store(store) as s:
            # The raw end: what the restore holds, whoever may read it.
            held: int = int(s.conn.execute(
                "SELECT coalesce(max(next_offset), 0) FROM sq_topics WHERE name = 'events'"
            ).fetchall()[0][0] or 0)
        with open(acks, encoding="utf-8") as lines:
            acked = [line.split() for line in lines.read().splitlines()]
        acked_here = [(int(o), float(t)) for o, t in acked if len(acked[0]) == 2]
        missing = [(o, t) for o, t in acked_here if o >= held]
        lost_events += len(missing)
        window = killed_at - min(t for _, t in missing) if missing else 0.0
        losses.append(window)
        print(f"kill {kill + 1}: {len(acked_here)} acknowledged this run, restored up to offset "
              f"{held}, lost {len(missing)} (the last {window:.2f} s), check "
              f"{'ok' if report.ok else report.problems}")
        shutil.rmtree(local)
    print(f"{kills} kills, default durability, 1 s sync interval: at most the last "
          f"{max(losses):.2f} s lost (median {statistics.median(losses):.2f} s), "
          f"{lost_events} events in all; {checked}/{kills} restored files pass check")


def _size(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, name))
    return total


def _soak(work: str, minutes: float, rate: float) -> None:
    store = os.path.join(work, "soak.sqlite")
    replica = os.path.join(work, "replica-soak")
    ltx = os.path.join(work, ".soak.sqlite-litestream")
    end = time.monotonic() + minutes * 60
    sent = 0
    samples = []
    with _Running(store, f"file://{replica}"):
        time.sleep(1.0)
        with Producer(store) as producer:
            start = time.monotonic()
            next_sample = start
            while time.monotonic() < end:
                due = int((time.monotonic() - start) * rate)
                for i in range(sent, due):
                    producer.publish_nowait("events", {"i": i, "pad": "x" * 100})
                sent = max(sent, due)
                if time.monotonic() >= next_sample:
                    wal = store + "-wal"
                    samples.append((time.monotonic() - start,
                                    os.path.getsize(wal) if os.path.exists(wal) else 0,
                                    os.path.getsize(store), _size(ltx), _size(replica)))
                    next_sample += 10
                time.sleep(0.005)
            producer.flush()
    for at, wal_bytes, db_bytes, local_bytes, remote_bytes in samples:
        print(f"t={at:5.0f}s  wal {wal_bytes / 1e6:7.2f} MB  file {db_bytes / 1e6:8.2f} MB  "
              f"local ltx {local_bytes / 1e6:7.2f} MB  replica {remote_bytes / 1e6:8.2f} MB")
    print(f"soak {minutes:g} min at {rate:g} events/s ({sent:,} events): WAL max "
          f"{max(s[1] for s in samples) / 1e6:.2f} MB, replica at the end "
          f"{samples[-1][4] / 1e6:.1f} MB for a {samples[-1][2] / 1e6:.1f} MB store")
