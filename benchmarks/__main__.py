"""``python -m benchmarks NAME``: side-by-side benchmarks (NAME: store, queue, source,
latency, sink, soak, drain, prune, unattended, crashes, replica, schema, schema-chaos, kit,
house).

Each benchmark module offers ``add_arguments(parser)`` and ``run(args)``;
modules that need pyspark import it only when chosen.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from benchmarks import results

BENCHMARKS = {
    "store": "publish-many, single publishes and range reads vs raw apsw",
    "queue": "enqueue and claim+ack vs raw apsw and peer queues",
    "source": "Spark source vs the rate source and the raw store read",
    "latency": "publish -> visible in foreachBatch, both read modes vs the rate source",
    "sink": "Spark sink (streaming and batch) vs raw apsw executemany",
    "soak": "minutes of steady load: memory, file size and lag over time",
    "drain": "a backlog in bounded availableNow batches (run_available_now) vs one batch",
    "prune": "a 10M-event prune beside a process publishing every 5 ms: its waits and errors",
    "unattended": "an edge box with no prune command: retention, file, WAL, Delta exactly once",
    "crashes": "consume->produce and job.transaction handlers SIGKILLed at random: exactly once",
    "replica": "replication (Litestream): publish_many with and without, kills, a soak",
    "schema": "a topic's 10-field schema: publish_many, the sink's commit, Store.publish",
    "schema-chaos": "a foreign producer's bad events into a quarantine, the query kill -9ed",
    "kit": "a spark_queue.testing test vs an empty availableNow query and Spark's MemoryStream",
    "house": "the read and the sink in instructions (callgrind) against an older tree",
}
# A module per benchmark, named after it, except where that name is a module's or a
# package's of spark_queue (store/store.py, store/queues/queue.py, connector/source/,
# connector/sink/): one name, one file (tests/test_naming.py).
MODULES = {"store": "store_bench", "queue": "queue_bench", "source": "source_bench",
           "sink": "sink_bench", "replica": "replica_bench", "schema": "schema_cost",
           "schema-chaos": "schema_chaos"}


def build_parser() -> argparse.ArgumentParser:
    """Every benchmark's subcommand and flags; importing them loads no pyspark."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    sub = parser.add_subparsers(dest="name", required=True)
    for name, help_text in BENCHMARKS.items():
        module_name = f"benchmarks.{MODULES.get(name, name)}"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        p = sub.add_parser(name, help=help_text)
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    results.start(argv)  # what this run prints is recorded in benchmarks/results.json
    return args.run(args) or 0


if __name__ == "__main__":
    raise SystemExit(main())
