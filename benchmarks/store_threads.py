"""Store benchmark, threads section: single publishes from many threads.

``--threads`` threads each publish ``--thread-events`` single events (one
call per event, durability ``normal``) through a :class:`Producer` and the
ways a service has without it (see :mod:`benchmarks.store_bench`).
With ``--kafka-bootstrap``, confluent-kafka's producer in the same shape
(``produce`` with a delivery callback per event, then ``flush``) from the
same threads and from one, and each round's ratios printed side by side:
the paths take turns, so load on the machine hits both sides of a ratio alike.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable

from benchmarks import kafka_broker, results
from benchmarks.report import print_table
from spark_queue.store import Producer, Store

# -- single publishes from many threads --------------------------------------------
BASELINE = "1 thread: Store.publish, 1 tx per event"
ONE_NOWAIT = "1 thread: Producer.publish_nowait"
KAFKA_THREADS = "Kafka {} threads: produce(callback), flush()"

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


def run_threads(
    args: argparse.Namespace, workdir: str, kafka: kafka_broker.Kafka | None = None
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

    def producer(nowait: bool, linger_ms: int, threads: int = threads) -> float:
        target = path()
        rows = values if threads == len(values) else [[v for row in values for v in row]]
        offsets: list[list[int]] = [[] for _ in range(threads)]
        with Producer(target, linger_ms=linger_ms) as sender:

            def body(t: int) -> None:
                if nowait:
                    # As the shape has it: one call per event, then each
                    # answer's result() (Kafka's side: produce, then flush).
                    futures = [sender.publish_nowait("bench", v) for v in rows[t]]
                    offsets[t] = [f.result() for f in futures]
                else:
                    offsets[t] = [sender.publish("bench", v) for v in rows[t]]

            elapsed = _in_threads(threads, body)
        _check_offsets(target, rows, offsets)
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
        cases[KAFKA_THREADS.format(threads)] = lambda: _kafka_threads(kafka, values)
        cases[ONE_NOWAIT] = lambda: producer(True, 1, 1)
        cases[KAFKA_THREADS.format(1)] = lambda: _kafka_threads(
            kafka, [[v for row in values for v in row]]
        )
    if not args.no_honker and importlib.util.find_spec("honker") is not None:
        cases["honker 1 thread: Stream.publish"] = lambda: _honker(path(), 1, total, size)
        cases[f"honker {threads} threads: Stream.publish"] = lambda: _honker(
            path(), threads, per_thread, size
        )
    rounds: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(args.repeats):  # paths take turns: load on the machine hits them alike
        for label, case in cases.items():
            rounds[label].append(case())
    title = (f"store: {threads} threads x {per_thread:,} single publishes of {size} bytes, "
             f"durability normal{pinned}")
    print_table(
        f"{title}, best of {args.repeats} rounds",
        [(label, max(rates), BASELINE) for label, rates in rounds.items()],
    )
    _print_round_ratios(title, rounds, [
        (f"{threads} threads: Producer.publish_nowait", KAFKA_THREADS.format(threads)),
        (ONE_NOWAIT, KAFKA_THREADS.format(1)),
        (f"{threads} threads: Producer.publish, linger_ms=1",
         f"{threads} threads: one Store each, 1 tx per event"),
    ])


def _print_round_ratios(
    title: str, rounds: dict[str, list[float]], pairs: list[tuple[str, str]]
) -> None:
    """Each pair's ratio in every round (both sides of a round ran back to back)."""
    pairs = [(ours, theirs) for ours, theirs in pairs if ours in rounds and theirs in rounds]
    print("\nper round: " + "; ".join(f"[{i}] {ours} / {theirs}" for i, (ours, theirs)
                                      in enumerate(pairs)))
    for n in range(len(next(iter(rounds.values())))):
        cells = [f"[{i}] {rounds[ours][n]:,.0f}/{rounds[theirs][n]:,.0f} = "
                 f"{rounds[ours][n] / rounds[theirs][n]:.2f}x" for i, (ours, theirs)
                 in enumerate(pairs)]
        print(f"round {n}: " + "   ".join(cells))
    figures: dict[str, results.Figure] = {}
    for ours, theirs in pairs:
        figures[f"{ours} / {theirs}, per round"] = [
            round(a / b, 2) for a, b in zip(rounds[ours], rounds[theirs], strict=True)]
        figures[f"{ours} /s, per round"] = [round(a) for a in rounds[ours]]
        figures[f"{theirs} /s, per round"] = [round(b) for b in rounds[theirs]]
    results.record(title + ", per round", figures)


def _kafka_threads(kafka: kafka_broker.Kafka, values: list[list[str]]) -> float:
    """Events/s of one thread per row of ``values`` producing it through one shared
    producer (librdkafka's is thread-safe), each with a delivery callback (the peer of
    a future's answer), each flushing at its end."""
    topic = kafka.new_topic("threads")
    sender = kafka.producer()
    sender.list_topics(topic, timeout=10)
    encoded = [[v.encode() for v in row] for row in values]
    failed: list[object] = []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failed.append(error)

    elapsed = _in_threads(
        len(values), lambda t: kafka_broker.send(sender, topic, encoded[t], on_delivery=delivered)
    )
    if failed:
        raise RuntimeError(f"kafka: {len(failed)} deliveries failed, the first: {failed[0]}")
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
