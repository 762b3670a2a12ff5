"""The rows the sink benchmarks write and the check that they all arrived, shared by the sink
benchmark (``sink_bench``) and its durability section (``sink_durability``), so neither
imports the other's helpers (the layer test holds that no benchmark modules form a circle)."""

from __future__ import annotations

import base64
import random

from spark_queue.store import Store


def bench_values(n: int, size: int) -> list[str]:
    """``size``-character values: a row number and random base64 (incompressible, like real ids)."""
    tail = size - 11
    noise = base64.b64encode(random.Random(42).randbytes(n * tail * 3 // 4 + 3)).decode()
    return [f"{i:010d}-" + noise[i * tail : (i + 1) * tail] for i in range(n)]


def check_written(path: str, n: int) -> None:
    """Fail unless topic ``bench`` of the store at ``path`` holds offsets ``[0, n)``."""
    with Store(path) as store:
        bounds = store.topic("bench").bounds()
    if bounds != (0, n):
        raise AssertionError(f"benchmark wrote offsets {bounds}, expected (0, {n})")
