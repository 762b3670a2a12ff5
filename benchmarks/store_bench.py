"""Store benchmark: publish-many and range reads against raw apsw; single publishes.

``python -m benchmarks store [--events N] [--threads N] [--thread-events N]
[--section all|bulk|single|outbox|threads] [--single-events N] [--no-honker] [--one-cpu]``

Bulk: the raw side is the limit: for writes, one ``INSERT ... SELECT ...
FROM carray(?)`` per 10,000 rows over the values bound as one array (SQLite's
own limit: nothing per row in Python), and pre-built row tuples into
``executemany`` (the limit of a row-by-row insert); ``SELECT ... fetchall()``
into tuples for reads; on a file opened with the same pragmas and schema. Our
side includes payload encoding and offset assignment (writes) and building
Arrow columns (reads).

Single: one event per transaction, ``Store.publish`` beside the raw
four-statement transaction and honker's single publish
(:mod:`benchmarks.single_publish`).

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

Kafka (``--kafka-bootstrap HOST:PORT``, :mod:`benchmarks.kafka_broker`): the
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
import os
import shutil
import tempfile
import time

import apsw

from benchmarks import kafka_broker, single_publish
from benchmarks.report import best_of, now_ms, print_table
from benchmarks.store_threads import run_threads
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
    parser.add_argument("--section", choices=("all", "bulk", "single", "outbox", "threads"),
                        default="all")
    parser.add_argument("--no-honker", action="store_true", help="skip honker's rows")
    parser.add_argument(
        "--one-cpu", action="store_true",
        help="threads section: pin the process to one CPU (shows what cross-CPU wake-ups cost)",
    )
    single_publish.add_arguments(parser)
    kafka_broker.add_argument(parser)


def run(args: argparse.Namespace) -> int:
    workdir = tempfile.mkdtemp(prefix="sq-bench-store-")
    kafka = kafka_broker.connect(args.kafka_bootstrap)
    try:
        if args.section in ("all", "bulk"):
            _run(args, workdir)
            if kafka:
                _run_kafka(args, workdir, kafka)
        if args.section in ("all", "single"):
            single_publish.run_single(args, workdir)
        if args.section in ("all", "outbox"):
            single_publish.run_outbox(args, workdir)
        if args.section in ("all", "threads"):
            run_threads(args, workdir, kafka)
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
        return Store(os.path.join(workdir, f"s{next(counter)}.sqlite"),
                     durability=args.durability)

    def ours_publish(store: Store) -> int:
        with store:
            return len(store.publish_many("bench", values))

    def raw_setup() -> tuple[Store, list[tuple]]:
        store = fresh()
        store.topic("bench").create()
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
        f"store: {n:,} events of {args.value_bytes} bytes, durability {args.durability}",
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
def _run_kafka(args: argparse.Namespace, workdir: str, kafka: kafka_broker.Kafka) -> None:
    n = args.events
    keys, values = kafka_broker.json_events(n, args.value_bytes)
    records = [Record(v, key=k) for k, v in zip(keys, values, strict=True)]
    key_bytes, value_bytes = [k.encode() for k in keys], [v.encode() for v in values]
    counter = iter(range(1_000_000))

    def fresh() -> str:
        return os.path.join(workdir, f"k{next(counter)}.sqlite")

    def publish_many(chunk: int) -> float:
        with Store(fresh()) as store:
            store.topic("bench").create()
            started = time.perf_counter()
            for i in range(0, n, chunk):
                store.publish_many("bench", records[i : i + chunk])
            elapsed = time.perf_counter() - started
            if store.topic("bench").bounds() != (0, n):
                raise RuntimeError(f"store: publish_many wrote {store.topic('bench').bounds()}")
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
