"""Shared helpers for benchmarks: timing the best of several runs, printing ratio tables."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence


def best_of(repeats: int, setup: Callable[[], object], body: Callable[[object], int]) -> float:
    """Run ``body(setup())`` ``repeats`` times; return the best rate in items per second."""
    best = 0.0
    for _ in range(repeats):
        state = setup()
        started = time.perf_counter()
        items = body(state)
        elapsed = time.perf_counter() - started
        best = max(best, items / elapsed)
    return best


def print_table(title: str, rows: Sequence[tuple[str, float, str]]) -> None:
    """``rows`` are (label, rate/s, baseline label); ratios are against the baseline's rate."""
    rates = {label: rate for label, rate, _ in rows}
    print(f"\n{title}  ({platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()})")
    print(f"{'path':<44} {'rows/s':>12} {'ratio':>8}  vs")
    for label, rate, baseline in rows:
        ratio = f"{rate / rates[baseline]:.2f}x" if baseline in rates and baseline != label else ""
        print(f"{label:<44} {rate:>12,.0f} {ratio:>8}  {baseline if ratio else ''}")
