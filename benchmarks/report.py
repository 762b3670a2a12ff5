"""Shared helpers for benchmarks: timing, percentiles, the local SparkSession, ratio tables."""

from __future__ import annotations

import datetime
import platform
import re
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from benchmarks import results

S = TypeVar("S")  # what a benchmark's setup hands its body


def best_of(repeats: int, setup: Callable[[], S], body: Callable[[S], int]) -> float:
    """Run ``body(setup())`` ``repeats`` times; return the best rate in items per second."""
    best = 0.0
    for _ in range(repeats):
        state = setup()
        started = time.perf_counter()
        items = body(state)
        elapsed = time.perf_counter() - started
        best = max(best, items / elapsed)
    return best


def now_ms() -> int:
    """Epoch milliseconds: the time raw-SQL baseline rows carry, stamped as the store stamps."""
    return time.time_ns() // 1_000_000


def print_table(title: str, rows: Sequence[tuple[str, float, str]]) -> None:
    """``rows`` are (label, rate/s, baseline label); ratios are against the baseline's rate.
    The table is recorded in benchmarks/results.json (:mod:`benchmarks.results`)."""
    rates = {label: rate for label, rate, _ in rows}
    figures: dict[str, float | str] = {}
    print(f"\n{title}  ({platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()})")
    print(f"{'path':<44} {'rows/s':>12} {'ratio':>8}  vs")
    for label, rate, baseline in rows:
        ratio = f"{rate / rates[baseline]:.2f}x" if baseline in rates and baseline != label else ""
        print(f"{label:<44} {rate:>12,.0f} {ratio:>8}  {baseline if ratio else ''}")
        figures[f"{label} /s"] = round(rate)
        if ratio:
            figures[f"{label} / {baseline}"] = round(rate / rates[baseline], 2)
    # The section is the title without a run's own load (results.json records the load).
    results.record(re.sub(r"\s*\(load average [^)]*\)", "", title), figures)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 <= q <= 1) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def in_batch_seconds(progress: Iterable[dict]) -> float:
    """Seconds Spark spent in micro-batches that had rows (``triggerExecution``): the
    query's own work, without its start and stop."""
    return sum(p["durationMs"].get("triggerExecution", 0) for p in progress
               if p["numInputRows"] > 0) / 1000


def local_session(app_name: str, cores: int, conf: dict[str, Any] | None = None):
    """A plain ``local[cores]`` SparkSession with Spark's defaults (no spark_queue conf/), UI
    off, plus ``conf``; Spark's Python workers run this interpreter. Imports pyspark, so call
    it in run()."""
    from pyspark.sql import SparkSession

    from spark_queue.spark.session import ensure_python_workers

    ensure_python_workers()
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "3g")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config(map=conf or {})
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def first_trigger_s(started_epoch_s: float, progress: list[dict]) -> float:
    """Seconds from ``start()`` (epoch seconds) to the first trigger, as Spark stamps it in
    the first progress event: the query's stand-up, before it reads anything."""
    stamp = datetime.datetime.fromisoformat(progress[0]["timestamp"].replace("Z", "+00:00"))
    return stamp.timestamp() - started_epoch_s
