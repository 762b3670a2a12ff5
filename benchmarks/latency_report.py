"""The latency benchmark's variants, samples and printed tables (``python -m
benchmarks latency``; the measuring is in :mod:`benchmarks.latency`)."""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass, field

from benchmarks import kafka_broker, results

FLOOR = "rate"
# rate's twin as a Python simple stream reader without I/O: what any Python
# source pays on the path latencyMode=low takes.
PYTHON_FLOOR = "python-rate"
TIMED = (FLOOR, PYTHON_FLOOR)  # sources that make their own rows, one a second
DEFAULT = "auto"  # the source's default latencyMode
READ_MODES = (DEFAULT, "throughput", "low")
# Spark's Kafka source, events sent by confluent-kafka: at Kafka's defaults, and with the
# consumer's fetch.max.wait.ms cut from 500 to 10 ms. Spark's pooled consumer keeps a fetch
# parked at the broker after each batch; a new batch's task waits for it to expire (up to
# fetch.max.wait.ms) before it can fetch its rows, so the default costs ~500 ms per batch.
KAFKA, KAFKA_TUNED = "kafka", "kafka-fetch10"
KAFKA_SOURCES = {KAFKA: {}, KAFKA_TUNED: {"kafka.fetch.max.wait.ms": "10"}}
MANAGERS = ("default", "filesystem")
PHASES = ("triggerExecution", "latestOffset", "queryPlanning", "walCommit", "addBatch",
          "commitOffsets")


@dataclass(frozen=True)
class Variant:
    """One measured path: the source (``rate`` or a ``latencyMode``), the checkpoint
    manager and whether progress is tracked asynchronously."""

    source: str
    manager: str
    async_progress: bool = False

    @property
    def label(self) -> str:
        name = {FLOOR: "rate (floor)", PYTHON_FLOOR: "Python rate, simple reader, no I/O",
                DEFAULT: "sqliteq, defaults (latencyMode=auto)",
                KAFKA: "Kafka, defaults",
                KAFKA_TUNED: "Kafka, fetch.max.wait.ms=10"}.get(
            self.source, f"sqliteq latencyMode={self.source}")
        return name + (" + async progress" if self.async_progress else "")

    @property
    def floor(self) -> Variant:
        return Variant(FLOOR, self.manager, self.async_progress)


@dataclass
class Samples:
    """What the turns of one variant measured."""

    latencies_s: list[float] = field(default_factory=list)
    phases_ms: list[dict[str, int]] = field(default_factory=list)
    batches: int = 0
    multi_row_batches: int = 0
    first_trigger_s: list[float] = field(default_factory=list)  # start() -> first trigger


# -- printing ---------------------------------------------------------------------


def print_latency(samples: dict[Variant, Samples], rows: list[Variant], title: str) -> None:
    from benchmarks.report import percentile

    print(f"\n{title}")
    print(f"{'path':<48} {'checkpoint manager':<21} {'events':>6} {'p50 ms':>7} {'p95 ms':>7}"
          f" {'p50 ratio':>9} {'p95 ratio':>9}  multi-row batches")
    figures: dict[str, results.Figure] = {}
    for variant in rows:
        s = samples[variant]
        p50, p95 = (percentile(s.latencies_s, q) * 1000 for q in (0.5, 0.95))
        floor = samples.get(variant.floor)
        ratios = ("", "")
        manager = "FileSystem" if variant.manager == "filesystem" else "default (FileContext)"
        name = f"{variant.label}, {manager}"
        figures[f"{name}: p50, p95 ms"] = [round(p50), round(p95)]
        if variant.source != FLOOR and floor and floor.latencies_s:
            p50_ratio = p50 / (percentile(floor.latencies_s, 0.5) * 1000)
            p95_ratio = p95 / (percentile(floor.latencies_s, 0.95) * 1000)
            ratios = (f"{p50_ratio:.2f}x", f"{p95_ratio:.2f}x")
            figures[f"{name}: p50, p95 / the floor"] = [round(p50_ratio, 2), round(p95_ratio, 2)]
        print(f"{variant.label:<48} {manager:<21} {len(s.latencies_s):>6} {p50:>7.0f} {p95:>7.0f}"
              f" {ratios[0]:>9} {ratios[1]:>9}  {s.multi_row_batches} of {s.batches}")
    results.record(f"latency: {title}", figures)


def print_targets(samples: dict[Variant, Samples]) -> None:
    from benchmarks.report import percentile

    def p50_ratio(source: str, manager: str) -> float:
        return (percentile(samples[Variant(source, manager)].latencies_s, 0.5)
                / percentile(samples[Variant(FLOOR, manager)].latencies_s, 0.5))

    if Variant(DEFAULT, "default") in samples:
        checks = [(f"{manager} manager p50 {p50_ratio(DEFAULT, manager):.2f}x the floor <= 1.10x",
                   p50_ratio(DEFAULT, manager) <= 1.10) for manager in MANAGERS]
        print("\nTarget, the defaults (latencyMode=auto): "
              + "; ".join(f"{text}: {'met' if ok else 'NOT met'}" for text, ok in checks))
    low, floor = Variant("low", "filesystem"), Variant(FLOOR, "filesystem")
    if low not in samples:
        return
    p50 = percentile(samples[low].latencies_s, 0.5) * 1000
    p95 = percentile(samples[low].latencies_s, 0.95) * 1000
    ratio = p50 / (percentile(samples[floor].latencies_s, 0.5) * 1000)
    checks = [(f"p50 {p50:.0f} ms <= 100", p50 <= 100), (f"p95 {p95:.0f} ms <= 150", p95 <= 150),
              (f"p50 {ratio:.2f}x the floor <= 1.00x", ratio <= 1.0)]
    print("Targets, latencyMode=low with the FileSystem manager: "
          + "; ".join(f"{text}: {'met' if ok else 'NOT met'}" for text, ok in checks))
    python_floor = samples.get(Variant(PYTHON_FLOOR, "filesystem"))
    if python_floor and python_floor.latencies_s:
        ratios = [percentile(samples[low].latencies_s, q)
                  / percentile(python_floor.latencies_s, q) for q in (0.5, 0.95)]
        print(f"latencyMode=low vs the Python rate source (FileSystem): p50 {ratios[0]:.2f}x, "
              f"p95 {ratios[1]:.2f}x")


def print_kafka(samples: dict[Variant, Samples], kafka: kafka_broker.Kafka) -> None:
    """p50 and p95 of each sqliteq mode against both Kafka paths under the same settings."""
    from benchmarks.report import percentile

    print(f"\n{kafka.describe()}; latency events sent with linger.ms=0, then flush()")
    print("sqliteq / Kafka, publish -> foreachBatch, under the same settings "
          "(p50, p95 ratios):")
    print(f"  {'path':<48} {'checkpoint manager':<21} {'vs Kafka defaults':>18} "
          f"{'vs fetch.max.wait.ms=10':>24}")
    figures: dict[str, results.Figure] = {}
    for variant, s in samples.items():
        if variant.source not in READ_MODES or not s.latencies_s:
            continue
        cells = []
        manager = "FileSystem" if variant.manager == "filesystem" else "default (FileContext)"
        for source in KAFKA_SOURCES:
            theirs = samples.get(Variant(source, variant.manager, variant.async_progress))
            if not (theirs and theirs.latencies_s):
                cells.append("")
                continue
            p50, p95 = (percentile(s.latencies_s, q) / percentile(theirs.latencies_s, q)
                        for q in (0.5, 0.95))
            cells.append(f"{p50:.2f}x, {p95:.2f}x")
            figures[f"{variant.label}, {manager}: p50, p95 / {Variant(source, 'x').label}"] = [
                round(p50, 2), round(p95, 2)]
        print(f"  {variant.label:<48} {manager:<21} {cells[0]:>18} {cells[1]:>24}")
    results.record("against Kafka: latency", figures)


def print_phases(samples: dict[Variant, Samples], rows: list[Variant]) -> None:
    print("\nOne-row micro-batch by Spark's progress phases (durationMs, p50; "
          "triggerExecution holds the others; latencyMode=low reads its rows in latestOffset; "
          "rows are visible at the end of addBatch, before commitOffsets)")
    print(f"{'path':<48} {'manager':<10}" + "".join(f" {p:>16}" for p in PHASES))
    for variant in rows:
        phases = samples[variant].phases_ms
        if not phases:
            continue
        cells = "".join(f" {statistics.median(d.get(p, 0) for d in phases):>16.0f}"
                        for p in PHASES)
        manager = "FileSystem" if variant.manager == "filesystem" else "default"
        print(f"{variant.label:<48} {manager:<10}{cells}")


def print_first_triggers(samples: dict[Variant, Samples], rows: list[Variant]) -> None:
    """Median start() -> first trigger per source (every turn is a new query), against rate's."""
    by_source: dict[str, list[float]] = {}
    for variant in rows:
        by_source.setdefault(variant.label.replace(" + async progress", ""), []).extend(
            samples[variant].first_trigger_s)
    floor = by_source.get("rate (floor)")
    if not floor:
        return
    base = statistics.median(floor)
    print("\nstart() -> first trigger (s, median over every turn of every manager; "
          "vs rate = median minus rate's median)")
    figures: dict[str, results.Figure] = {}
    for label, values in by_source.items():
        if values:
            median = statistics.median(values)
            print(f"  {label:<48} {median:6.2f}  vs rate {median - base:+6.2f}  "
                  f"(min {min(values):.2f}, max {max(values):.2f}, {len(values)} starts)")
            figures[f"{label}: median, min, max s"] = [
                round(median, 2), round(min(values), 2), round(max(values), 2)]
    results.record("latency: start() -> first trigger", figures)


def print_bulk(bulk: dict[str, tuple], args: argparse.Namespace) -> None:
    from benchmarks.report import print_table

    base = "sqliteq, defaults (latencyMode=auto)"
    names = {DEFAULT: base, "throughput": "sqliteq latencyMode=throughput",
             "low": "sqliteq latencyMode=low"}
    rows = []
    for column, what in ((0, "wall"), (1, "in-batch")):
        rows += [(f"{names[mode]} ({what})", bulk[mode][column], f"{base} ({what})")
                 for mode in READ_MODES]
    print_table(
        f"Bulk: {args.bulk_events:,} events of 100 bytes, availableNow into noop, one "
        f"micro-batch, best of {args.repeats} (wall = query start included; in-batch = "
        "triggerExecution)",
        rows,
    )
