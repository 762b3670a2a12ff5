"""``bench schema``: what a topic's schema costs its writers (issue 61 asks >= 0.8x for
``publish_many`` and the sink's commit with a 10-field schema, >= 0.9x for a single publish).

Each path publishes the same events into a topic without a schema and into a topic with a
10-field schema (every event fits), the two taking turns on fresh store files with the
store's pragmas (durability ``normal``), best of ``--repeats``:

- ``publish_many`` of dicts (encoded to JSON, then checked);
- the sink's commit (``commit_sink_batch`` of pre-encoded JSON text chunks, as the Spark
  sink's driver commits what its executors encoded; Spark itself not running), of chunks
  the commit checks, and of chunks its tasks checked (marked ``TopicSchema.checked``, as the
  sink's tasks mark them when every row fits), with a row for that check on one thread
  (``TopicSchema.all_fit``: what the tasks pay, in parallel, beside Spark's own work);
- ``Store.publish``, one event per transaction.

The check parses every value with ``json.loads`` and walks the schema's rows
(spark_queue/store/streams/schema_fields.py); a valid event is stored as without a schema.
``--section readers`` and ``--section spark-sink`` run Spark (benchmarks/schema_reads.py).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable

from benchmarks.report import print_table
from benchmarks.schema_events import SCHEMA, event
from spark_queue.store import TEXT, EncodedChunk, Store, TopicRows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=200_000,
                        help="events per path and repeat for publish_many and the sink")
    parser.add_argument("--single-events", type=int, default=5_000,
                        help="events per repeat for Store.publish (one transaction each)")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--section", choices=("writers", "readers", "spark-sink"),
                        default="writers",
                        help="readers: a Spark read of the declared columns against the same "
                        "read given the schema; spark-sink: a Spark batch write into a topic "
                        "with the schema against one without (benchmarks/schema_reads.py; "
                        "both start Spark)")
    parser.add_argument("--read-events", type=int, default=200_000,
                        help="events of the topic the readers read")
    parser.add_argument("--cores", type=int, default=2, help="local[N] for the readers")


def _timed(workdir: str, schema: str | None, body: Callable[[Store], int]) -> float:
    path = os.path.join(workdir, f"{time.perf_counter_ns()}.sqlite")
    with Store(path) as store:
        if schema is not None:
            store.topic("t").set_schema(schema)
        else:
            store.topic("t").create()
        started = time.perf_counter()
        items = body(store)
        elapsed = time.perf_counter() - started
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return items / elapsed


def run(args: argparse.Namespace) -> int:
    if args.section != "writers":
        from benchmarks import schema_reads  # imports pyspark

        return schema_reads.run(args)
    dicts = [event(i) for i in range(args.events)]
    texts = [json.dumps(d, separators=(",", ":")) for d in dicts]
    singles = dicts[:args.single_events]
    chunk = 10_000

    def many(store: Store) -> int:
        return len(store.publish_many("t", dicts))

    def sink(store: Store) -> int:
        chunks = [EncodedChunk(texts[i:i + chunk], TEXT) for i in range(0, len(texts), chunk)]
        return store.commit_sink_batch("bench", 0, TopicRows("t", chunks)).rows

    def sink_checked(store: Store) -> int:
        schema = store.topic("t").schema()
        mark = None if schema is None else schema.checked
        chunks = [EncodedChunk(texts[i:i + chunk], TEXT, checked=mark)
                  for i in range(0, len(texts), chunk)]
        return store.commit_sink_batch("bench", 0, TopicRows("t", chunks)).rows

    def single(store: Store) -> int:
        for value in singles:
            store.publish("t", value)
        return len(singles)

    paths = [("publish_many", many), ("sink commit", sink),
             ("sink commit, task-checked", sink_checked),
             ("Store.publish", single)]
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as workdir:
        with Store(os.path.join(workdir, "schema.sqlite")) as store:
            declared = store.topic("t").set_schema(SCHEMA)
        for _ in range(args.repeats):
            started = time.perf_counter()
            assert declared.all_fit(texts)
            best["the tasks' check (all_fit), one thread"] = max(
                best.get("the tasks' check (all_fit), one thread", 0.0),
                len(texts) / (time.perf_counter() - started))
            for name, body in paths:  # the two topics take turns, path by path
                for schema in (None, SCHEMA):
                    label = f"{name}, {'10-field schema' if schema else 'no schema'}"
                    best[label] = max(best.get(label, 0.0), _timed(workdir, schema, body))
    rows = []
    for name, _ in paths:
        plain = f"{name}, no schema"
        rows += [(plain, best[plain], plain), (f"{name}, 10-field schema",
                                               best[f"{name}, 10-field schema"], plain)]
    check = "the tasks' check (all_fit), one thread"
    rows.append((check, best[check], check))
    print_table("A topic's schema: its writers' cost", rows)
    return 0
