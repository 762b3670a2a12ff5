"""Store benchmark: publish-many and range reads against raw apsw; single publishes.

``python -m spark_queue.bench store [--events N] [--threads N] [--thread-events N]
[--section all|bulk|single|threads] [--single-events N] [--no-honker] [--one-cpu]``

Bulk: the raw side is the limit: for writes, one ``INSERT ... SELECT ...
FROM carray(?)`` per 10,000 rows over the values bound as one array (SQLite's
own limit: nothing per row in Python), and pre-built row tuples into
``executemany`` (the limit of a row-by-row insert); ``SELECT ... fetchall()``
into tuples for reads; on a file opened with the same pragmas and schema. Our
side includes payload encoding and offset assignment (writes) and building
Arrow columns (reads).

Single: one event per transaction, ``Store.publish`` beside the raw
four-statement transaction and honker's single publish
(:mod:`spark_queue.bench.single_publish`).

Threads: ``--threads`` threads each publish ``--thread-events`` single events
(one call per event, durability ``normal``) through a :class:`Producer`
(group commit; blocking at ``linger_ms`` 0 and 1, the default, and with
futures), and
the two ways a service has without it, one transaction per event: one Store
per thread, or one Store shared behind a lock (what
honker's thread-safe ``Stream.publish`` does). The baseline is the same
events from one thread with ``Store.publish``: one transaction per event
with no hand-off between threads.
honker itself, if installed (the ``bench`` extra), runs in a subprocess:
it brings its own SQLite library, which must not share a process with apsw
connections. The paths take turns on every repeat, so machine load hits
them alike. Every offset a producer call returned is checked against what a
reader sees.

Kafka (``--kafka-bootstrap HOST:PORT``, :mod:`spark_queue.bench.kafka`): the
bulk section adds a table of the same ``--events`` as keyed JSON (8-byte
keys, ~100-byte values, the same text on both sides): ``Store.publish_many``
in one transaction and in transactions of 10,000, a :class:`Producer` fed
from one thread with ``publish_nowait``, and confluent-kafka's producer
(``acks=all``, idempotence, ``linger.ms=5``; ``flush`` inside the time), the
paths taking turns each round. The threads section adds the same threads
calling Kafka's ``produce`` then ``flush`` (its only way; the peer of
``publish_nowait``).

``--one-cpu`` runs the whole section with the process pinned to one CPU.
Every blocking call from its own thread costs at least one thread wake-up,
and on a VM a wake-up across CPUs can cost as much as a whole transaction;
the pinned run shows how much of the gap that is (it is not a setting to
recommend: SQLite and Spark want the other CPUs).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from concurrent.futures import wait

import apsw

from spark_queue.bench import kafka as kafka_bench
from spark_queue.bench import single_publish
from spark_queue.bench.report import best_of, now_ms, print_table
from spark_queue.store import TEXT, Producer, Record, Store

KAFKA_CHUNK = 10_000  # events per transaction in the chunked publish_many row
PACKED_CHUNK = 10_000  # rows per statement of the raw one-statement insert (the limit)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=8, help="publishing threads")
    parser.add_argument(
        "--thread-events", type=int, default=5_000, help="single publishes per thread"
    )
    parser.add_argument("--section", choices=("all", "bulk", "single", "threads"), default="all")
    parser.add_argument("--no-honker", action="store_true", help="skip honker's rows")
    parser.add_argument(
        "--one-cpu", action="store_true",
        help="threads section: pin the process to one CPU (shows what cross-CPU wake-ups cost)",
    )
    single_publish.add_arguments(parser)
    kafka_bench.add_argument(parser)


def run(args: argparse.Namespace) -> int:
    workdir = tempfile.mkdtemp(prefix="sq-bench-store-")
    kafka = kafka_bench.connect(args.kafka_bootstrap)
    try:
        if args.section in ("all", "bulk"):
            _run(args, workdir)
            if kafka:
                _run_kafka(args, workdir, kafka)
        if args.section in ("all", "single"):
            single_publish.run_single(args, workdir)
        if args.section in ("all", "threads"):
            _run_threads(args, workdir, kafka)
        return 0
    finally:
        if kafka:
            kafka.close()
        shutil.rmtree(workdir, ignore_errors=True)


def _run(args: argparse.Namespace, workdir: str) -> int:
    n = args.events
    values = [f"{i:012d}" + "x" * (args.value_bytes - 12) for i in range(n)]
    counter = iter(range(1_000_000))

    def fresh() -> Store:
        return Store(os.path.join(workdir, f"s{next(counter)}.sqlite"))

    def ours_publish(store: Store) -> int:
        with store:
            return len(store.publish_many("bench", values))

    def raw_setup() -> tuple[Store, list[tuple]]:
        store = fresh()
        store.create_topic("bench")
        ts = now_ms()
        return store, [(1, i, ts, None, v, TEXT, None) for i, v in enumerate(values)]

    def raw_insert(state: tuple[Store, list[tuple]]) -> int:
        store, rows = state
        with store, store.write() as conn:
            conn.executemany(
                "INSERT INTO sq_events (topic_id, offset, ts_ms, key, value, value_type, headers)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        return len(rows)

    def raw_packed(state: tuple[Store, list[tuple]]) -> int:
        # SQLite's own limit for these rows: one INSERT ... SELECT per chunk
        # over a bound array of the values, nothing computed per row in Python.
        store, _ = state
        ts = now_ms()
        with store, store.write() as conn:
            for start in range(0, n, PACKED_CHUNK):
                conn.execute(
                    "INSERT INTO sq_events (topic_id, offset, ts_ms, key, value, value_type, "
                    "headers) SELECT 1, ?1 + rowid - 1, ?2, NULL, value, ?3, NULL "
                    "FROM carray(?4)",
                    (start, ts, TEXT, apsw.carray(tuple(values[start : start + PACKED_CHUNK]))),
                )
        return n

    publish = best_of(args.repeats, fresh, ours_publish)
    raw_write = best_of(args.repeats, raw_setup, raw_insert)
    raw_limit = best_of(args.repeats, raw_setup, raw_packed)

    reader = fresh()
    reader.publish_many("bench", values)

    def read_arrow(_: object) -> int:
        return reader.read_arrow("bench", 0).num_rows

    def read_payloads(_: object) -> int:
        return reader.read_arrow_payloads("bench", 0, n).num_rows

    def read_events(_: object) -> int:
        return len(reader.read("bench", 0))

    def raw_select(_: object) -> int:
        return len(
            reader.conn.execute(
                "SELECT offset, ts_ms, key, value, value_type, headers FROM sq_events "
                "WHERE topic_id = 1 AND offset >= 0 AND offset < ? ORDER BY offset",
                (n,),
            ).fetchall()
        )

    none = lambda: None  # noqa: E731
    arrow = best_of(args.repeats, none, read_arrow)
    payloads = best_of(args.repeats, none, read_payloads)
    events = best_of(args.repeats, none, read_events)
    raw_read = best_of(args.repeats, none, raw_select)
    reader.close()

    raw_w, raw_r = "raw apsw executemany (pre-built tuples)", "raw apsw SELECT fetchall (tuples)"
    raw_l = f"raw one INSERT ... FROM carray per {PACKED_CHUNK:,}"
    print_table(
        f"store: {n:,} events of {args.value_bytes} bytes",
        [
            (raw_l, raw_limit, raw_l),
            (raw_w, raw_write, raw_l),
            ("Store.publish_many (one transaction)", publish, raw_l),
            (raw_r, raw_read, raw_r),
            ("Store.read_arrow (pyarrow Table)", arrow, raw_r),
            ("Store.read_arrow_payloads (the source's read)", payloads, raw_r),
            ("Store.read (Event objects)", events, raw_r),
        ],
    )
    return 0


# -- against Kafka's producer ----------------------------------------------------------
def _run_kafka(args: argparse.Namespace, workdir: str, kafka: kafka_bench.Kafka) -> None:
    n = args.events
    keys, values = kafka_bench.json_events(n, args.value_bytes)
    records = [Record(v, key=k) for k, v in zip(keys, values, strict=True)]
    key_bytes, value_bytes = [k.encode() for k in keys], [v.encode() for v in values]
    counter = iter(range(1_000_000))

    def fresh() -> str:
        return os.path.join(workdir, f"k{next(counter)}.sqlite")

    def publish_many(chunk: int) -> float:
        with Store(fresh()) as store:
            store.create_topic("bench")
            started = time.perf_counter()
            for i in range(0, n, chunk):
                store.publish_many("bench", records[i : i + chunk])
            elapsed = time.perf_counter() - started
            if store.bounds("bench") != (0, n):
                raise RuntimeError(f"store: publish_many wrote {store.bounds('bench')}")
        return elapsed

    def producer() -> float:
        target = fresh()
        Store(target).close()
        started = time.perf_counter()
        with Producer(target) as sender:
            futures = [sender.publish_nowait("bench", r.value, key=r.key) for r in records]
        elapsed = time.perf_counter() - started  # close() waited for every commit
        if [f.result() for f in futures] != list(range(n)):
            raise RuntimeError("store: the Producer's offsets are not 0..n-1 in order")
        return elapsed

    def kafka_producer() -> float:
        return kafka.produce(kafka.new_topic("store"), value_bytes, key_bytes)

    kafka_label = "Kafka producer, flush included"
    cases = {
        "Store.publish_many, one transaction": lambda: publish_many(n),
        f"Store.publish_many, {KAFKA_CHUNK:,} per transaction": lambda: publish_many(
            KAFKA_CHUNK),
        "Producer.publish_nowait, 1 thread": producer,
        kafka_label: kafka_producer,
    }
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(args.repeats):  # paths take turns: load on the machine hits them alike
        for label, case in cases.items():
            best[label] = min(best[label], case())
    print(f"\n{kafka.describe()}")
    print_table(
        f"store vs Kafka: {n:,} events, 8-byte keys, {args.value_bytes}-byte JSON values, "
        f"durability normal, best of {args.repeats} rounds",
        [(label, n / seconds, kafka_label) for label, seconds in best.items()],
    )


# -- single publishes from many threads --------------------------------------------
BASELINE = "1 thread: Store.publish, 1 tx per event"

HONKER = textwrap.dedent(
    """
    import sys, threading, time, honker
    path, threads, per_thread, size = sys.argv[1], *map(int, sys.argv[2:])
    stream = honker.open(path).stream("bench")
    value = "x" * size
    start = threading.Barrier(threads + 1)
    def publish():
        start.wait()
        for _ in range(per_thread):
            stream.publish(value)
    workers = [threading.Thread(target=publish) for _ in range(threads)]
    for worker in workers:
        worker.start()
    start.wait()
    started = time.perf_counter()
    for worker in workers:
        worker.join()
    print(threads * per_thread / (time.perf_counter() - started))
    """
)


def _in_threads(threads: int, body: Callable[[int], object]) -> float:
    """Seconds from a common start until ``body(i)`` returned in each of ``threads`` threads."""
    start = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def target(i: int) -> None:
        start.wait()
        try:
            body(i)
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the main thread
            errors.append(exc)

    workers = [threading.Thread(target=target, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    start.wait()
    started = time.perf_counter()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise errors[0]
    return elapsed


def _run_threads(
    args: argparse.Namespace, workdir: str, kafka: kafka_bench.Kafka | None = None
) -> None:
    threads, per_thread, size = args.threads, args.thread_events, args.value_bytes
    pinned = ""
    if args.one_cpu:
        cpu = min(os.sched_getaffinity(0))
        # Threads started from now on inherit the main thread's affinity.
        os.sched_setaffinity(0, {cpu})
        pinned = f", pinned to CPU {cpu}"
    total = threads * per_thread
    # Each value names its thread and sequence number, so a reader can check
    # the offset every call got back.
    values = [
        [f"{t:03d}-{i:09d}-".ljust(size, "x") for i in range(per_thread)] for t in range(threads)
    ]
    counter = iter(range(1_000_000))

    def path() -> str:
        return os.path.join(workdir, f"t{next(counter)}.sqlite")

    def one_thread() -> float:
        with Store(path()) as store:
            started = time.perf_counter()
            for row in values:
                for value in row:
                    store.publish("bench", value)
            return total / (time.perf_counter() - started)

    def store_per_thread() -> float:
        target = path()
        Store(target).close()
        stores = [Store(target, busy_timeout_ms=60_000) for _ in range(threads)]
        try:
            return total / _in_threads(
                threads, lambda t: [stores[t].publish("bench", v) for v in values[t]]
            )
        finally:
            for store in stores:
                store.close()

    def shared_store() -> float:
        lock = threading.Lock()

        def body(t: int) -> None:
            for value in values[t]:
                with lock:
                    store.publish("bench", value)

        with Store(path()) as store:
            return total / _in_threads(threads, body)

    def producer(nowait: bool, linger_ms: int) -> float:
        target = path()
        offsets: list[list[int]] = [[] for _ in range(threads)]
        with Producer(target, linger_ms=linger_ms) as sender:

            def body(t: int) -> None:
                if nowait:
                    futures = [sender.publish_nowait("bench", v) for v in values[t]]
                    wait(futures)
                    offsets[t] = [f.result() for f in futures]
                else:
                    offsets[t] = [sender.publish("bench", v) for v in values[t]]

            elapsed = _in_threads(threads, body)
        _check_offsets(target, values, offsets)
        return total / elapsed

    cases: dict[str, Callable[[], float]] = {
        BASELINE: one_thread,
        f"{threads} threads: one Store each, 1 tx per event": store_per_thread,
        f"{threads} threads: one Store + a lock, 1 tx each": shared_store,
        f"{threads} threads: Producer.publish, linger_ms=0": lambda: producer(False, 0),
        f"{threads} threads: Producer.publish, linger_ms=1": lambda: producer(False, 1),
        f"{threads} threads: Producer.publish_nowait": lambda: producer(True, 1),
    }
    if kafka:
        cases[f"Kafka {threads} threads: produce(), then flush()"] = lambda: _kafka_threads(
            kafka, threads, values
        )
    if not args.no_honker and importlib.util.find_spec("honker") is not None:
        cases["honker 1 thread: Stream.publish"] = lambda: _honker(path(), 1, total, size)
        cases[f"honker {threads} threads: Stream.publish"] = lambda: _honker(
            path(), threads, per_thread, size
        )
    best = dict.fromkeys(cases, 0.0)
    for _ in range(args.repeats):
        for label, case in cases.items():
            best[label] = max(best[label], case())
    print_table(
        f"store: {threads} threads x {per_thread:,} single publishes of {size} bytes, "
        f"durability normal{pinned}",
        [(label, rate, BASELINE) for label, rate in best.items()],
    )


def _kafka_threads(kafka: kafka_bench.Kafka, threads: int, values: list[list[str]]) -> float:
    """Events/s of ``threads`` threads producing their values through one shared producer
    (librdkafka's is thread-safe), each flushing at its end."""
    topic = kafka.new_topic("threads")
    sender = kafka.producer()
    sender.list_topics(topic, timeout=10)
    encoded = [[v.encode() for v in row] for row in values]
    elapsed = _in_threads(threads, lambda t: kafka_bench.send(sender, topic, encoded[t]))
    total = sum(map(len, values))
    kafka.check_count(topic, total)
    return total / elapsed


def _check_offsets(path: str, values: list[list[str]], offsets: list[list[int]]) -> None:
    """Every offset a call returned holds that call's value; offsets are dense."""
    with Store(path) as reader:
        stored = [event.value for event in reader.read("bench")]
    if len(stored) != sum(map(len, values)):
        raise RuntimeError(f"producer check: {len(stored)} events stored, expected more")
    for sent, got in zip(values, offsets, strict=True):
        if [stored[offset] for offset in got] != sent or got != sorted(got):
            raise RuntimeError("producer check: a returned offset does not hold its value")


def _honker(path: str, threads: int, per_thread: int, size: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", HONKER, path, str(threads), str(per_thread), str(size)],
        capture_output=True, text=True, check=True, timeout=600,
    )
    return float(out.stdout.strip().splitlines()[-1])
