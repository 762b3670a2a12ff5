"""``sqliteq demo``: the main job a new user runs first (README command 1).

For now a store-only walk-through: a producer publishes synthetic events, a
consumer reads them by offset and saves its position, retention trims what
was read. The Spark pipeline replaces the middle step once the connector lands.
"""

from __future__ import annotations

import argparse
import os
import random
import time

from spark_queue.cli.output import emit_object
from spark_queue.store import Record, Store

DEFAULT_DIR = "spark_queue_demo"


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the demo pipeline on a store under ./spark_queue_demo")
    p.add_argument("--dir", default=DEFAULT_DIR, help=f"working directory (default {DEFAULT_DIR})")
    p.add_argument("--events", type=int, default=100_000, help="events to produce")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, "demo.sqlite")
    rng = random.Random(7)
    with Store(path) as store:
        started = time.perf_counter()
        offsets = store.publish_many(
            "clicks",
            (
                Record({"user": rng.randrange(1000), "page": f"/p/{rng.randrange(50)}"},
                       key=f"u{i % 1000}")
                for i in range(args.events)
            ),
        )
        produced_s = time.perf_counter() - started
        consumed, position = 0, store.committed_offsets("demo-reader").get("clicks", 0)
        started = time.perf_counter()
        while True:
            batch = store.read_arrow("clicks", position, limit=10_000)
            if batch.num_rows == 0:
                break
            consumed += batch.num_rows
            position = batch.column("offset")[-1].as_py() + 1
            store.commit_offsets("demo-reader", {"clicks": position})
        consumed_s = time.perf_counter() - started
        pruned = store.prune("clicks", max_rows=1000)[0]
        earliest, latest = store.bounds("clicks")
    emit_object(
        {
            "store": path,
            "published": f"{len(offsets)} events in {produced_s:.2f}s "
            f"({len(offsets) / max(produced_s, 1e-9):,.0f}/s)",
            "consumed": f"{consumed} events in {consumed_s:.2f}s",
            "pruned": f"{pruned.deleted} events (kept the newest 1000)",
            "offsets": f"earliest {earliest}, latest {latest}",
            "next": f"sqliteq topics {path}; sqliteq tail {path} clicks --limit 5",
        },
        as_json=False,
    )
    return 0
