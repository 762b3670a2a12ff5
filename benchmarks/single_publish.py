"""``bench store --section single``: one event per transaction, against its raw limit.

A service that publishes one event per request lives on ``Store.publish``:
one write transaction per event. Three paths take turns on every repeat,
each on a fresh store file with the store's pragmas (durability ``normal``),
one thread, ``--single-events`` events of ``--value-bytes`` text each:

- the raw limit: the four statements a one-event transaction needs, run with
  apsw and nothing else in Python (BEGIN IMMEDIATE, read the topic's
  ``next_offset``, INSERT the event, UPDATE ``next_offset``, COMMIT);
- ``Store.publish(topic, value)``;
- honker's ``Stream.publish`` (if installed: the ``bench`` extra), in a
  subprocess, since it brings its own SQLite library, which must not share a
  process with apsw connections. Its rate is timed inside that process, so
  the interpreter's start is not counted.

Ratios are against the raw transaction and against honker.

``--section outbox`` times the outbox's transaction, ``store.transaction()`` holding one
business INSERT (a row of an ``orders`` table) and one ``tx.publish``, against
``Store.publish`` alone (#50 asks for at least 0.9x; docs/transactions.md) and against
its raw limit (the same five statements with apsw), the paths taking turns on fresh
files, at durability ``normal`` and ``full``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable

from benchmarks.report import now_ms, print_table
from spark_queue.store import TEXT, Store

RAW = "raw: 4 statements, 1 tx per event"
OURS = "Store.publish, 1 tx per event"
OUTBOX = "transaction: 1 INSERT + tx.publish"
OUTBOX_RAW = "raw: INSERT + the 4 statements, 1 tx"
HONKER = "honker Stream.publish, 1 tx each"

HONKER_SCRIPT = textwrap.dedent(
    """
    import sys, time, honker
    path, events, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    stream = honker.open(path).stream("bench")
    values = [f"{i:012d}".ljust(size, "x") for i in range(events)]
    started = time.perf_counter()
    for value in values:
        stream.publish(value)
    print(events / (time.perf_counter() - started))
    """
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--durability", choices=("full", "normal", "off"), default="normal",
        help="the stores' durability (full: an fsync per commit; docs/operations.md)",
    )
    parser.add_argument(
        "--single-events", type=int, default=5_000,
        help="single section: events published one per transaction, per path and repeat",
    )
    parser.add_argument(
        "--full-events", type=int, default=1_000,
        help="outbox section: events per path and repeat at durability full (an fsync each)",
    )


def run_single(args: argparse.Namespace, workdir: str) -> None:
    n, size = args.single_events, args.value_bytes
    values = [f"{i:012d}".ljust(size, "x") for i in range(n)]
    counter = iter(range(1_000_000))

    def path() -> str:
        return os.path.join(workdir, f"single{next(counter)}.sqlite")

    def raw() -> float:
        with Store(path(), durability=args.durability) as store:
            store.topic("bench").create()
            tid = store.conn.execute("SELECT id FROM sq_topics").fetchall()[0][0]
            conn = store.conn
            started = time.perf_counter()
            for value in values:
                conn.execute("BEGIN IMMEDIATE")
                nxt = int(conn.execute(  # type: ignore[arg-type]  # apsw: any SQLite value
                    "SELECT next_offset FROM sq_topics WHERE id = ?", (tid,)).fetchall()[0][0])
                conn.execute(
                    "INSERT INTO sq_events (topic_id, offset, ts_ms, key, value, value_type, "
                    "headers) VALUES (?, ?, ?, NULL, ?, ?, NULL)",
                    (tid, nxt, now_ms(), value, TEXT),
                )
                conn.execute("UPDATE sq_topics SET next_offset = ? WHERE id = ?", (nxt + 1, tid))
                conn.execute("COMMIT")
            elapsed = time.perf_counter() - started
            _check(store, n)
        return n / elapsed

    def ours() -> float:
        with Store(path(), durability=args.durability) as store:
            store.topic("bench").create()
            return _publish_rate(store, values)

    cases: dict[str, Callable[[], float]] = {RAW: raw, OURS: ours}
    if not args.no_honker and importlib.util.find_spec("honker") is not None:
        cases[HONKER] = lambda: _honker(path(), n, size)
    best = dict.fromkeys(cases, 0.0)
    for _ in range(args.repeats):  # paths take turns: load on the machine hits them alike
        for label, case in cases.items():
            best[label] = max(best[label], case())
    rows = [(label, rate, RAW) for label, rate in best.items()]
    if HONKER in best:
        rows.append(("Store.publish (against honker)", best[OURS], HONKER))
    load = os.getloadavg()[0]
    print_table(
        f"store: {n:,} single publishes of {size} bytes, one thread, durability {args.durability}, "
        f"best of {args.repeats} rounds (load average {load:.1f})",
        rows,
    )


def run_outbox(args: argparse.Namespace, workdir: str) -> None:
    """The outbox's transaction against ``Store.publish`` alone and against its raw limit,
    at durability ``normal`` (no fsync: SQLite's own work counts) and ``full`` (an fsync
    per commit, as a service that must not lose an order runs; fewer events)."""
    for durability, n in (("normal", args.single_events),
                          ("full", min(args.single_events, args.full_events))):
        _outbox_table(args, workdir, durability, n)


def _outbox_table(args: argparse.Namespace, workdir: str, durability: str, n: int) -> None:
    values = [f"{i:012d}".ljust(args.value_bytes, "x") for i in range(n)]
    counter = iter(range(1_000_000))

    def new_store() -> Store:
        path = os.path.join(workdir, f"outbox-{durability}{next(counter)}.sqlite")
        store = Store(path, durability=durability)
        store.topic("bench").create()
        store.conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)")
        return store

    def alone() -> float:
        with new_store() as store:
            return _publish_rate(store, values)

    def raw() -> float:
        with new_store() as store:
            conn = store.conn
            started = time.perf_counter()
            for number, value in enumerate(values):
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("INSERT INTO orders (id, note) VALUES (?, ?)", (number, "new"))
                conn.execute(
                    "INSERT INTO sq_events (topic_id, offset, ts_ms, key, value, value_type, "
                    "headers) VALUES (1, ?, ?, NULL, ?, ?, NULL)",
                    (number, now_ms(), value, TEXT),
                )
                conn.execute("UPDATE sq_topics SET next_offset = ? WHERE id = 1", (number + 1,))
                conn.execute("COMMIT")
            elapsed = time.perf_counter() - started
            _check(store, n)
        return n / elapsed

    def outbox() -> float:
        with new_store() as store:
            started = time.perf_counter()
            for number, value in enumerate(values):
                with store.transaction() as tx:
                    tx.execute("INSERT INTO orders (id, note) VALUES (?, ?)", (number, "new"))
                    tx.publish("bench", value)
            elapsed = time.perf_counter() - started
            _check(store, n)
        return n / elapsed

    cases: dict[str, Callable[[], float]] = {OURS: alone, OUTBOX_RAW: raw, OUTBOX: outbox}
    best = dict.fromkeys(cases, 0.0)
    for _ in range(args.repeats):
        for label, case in cases.items():
            best[label] = max(best[label], case())
    load = os.getloadavg()[0]
    rows = [(label, rate, OURS) for label, rate in best.items()]
    rows.append((f"{OUTBOX} (against its raw limit)", best[OUTBOX], OUTBOX_RAW))
    print_table(
        f"store: {n:,} single publishes of {args.value_bytes} bytes beside a business INSERT "
        f"in one transaction, one thread, durability {durability}, best of {args.repeats} "
        f"rounds (load average {load:.1f})",
        rows,
    )


def _publish_rate(store: Store, values: list[str]) -> float:
    """``Store.publish`` of each value to topic ``bench``, one transaction each: events/s,
    checked (offsets 0..n-1, every value) after the clock stops."""
    started = time.perf_counter()
    for value in values:
        store.publish("bench", value)
    elapsed = time.perf_counter() - started
    _check(store, len(values))
    return len(values) / elapsed


def _check(store: Store, n: int) -> None:
    if store.topic("bench").bounds() != (0, n):
        raise RuntimeError(
            f"single publish: stored {store.topic('bench').bounds()}, expected (0, {n})")


def _honker(path: str, events: int, size: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", HONKER_SCRIPT, path, str(events), str(size)],
        capture_output=True, text=True, check=True, timeout=600,
    )
    return float(out.stdout.strip().splitlines()[-1])
