"""``sqliteq demo``: the main job a new user runs first (README command 1).

A background producer publishes sensor readings into a store under
``./spark_queue_demo``; a local Spark streams them into a Delta table and
enqueues alerts; worker threads process the alerts. Settings come from
``conf/demo.toml``; flags override them. pyspark is imported only here.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from spark_queue.cli.output import emit_object


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="run the demo pipeline (producer -> Spark -> Delta and a queue -> workers)"
    )
    p.add_argument("--config", help="settings file (default: conf/demo.toml)")
    p.add_argument("--dir", help="working directory (default from the config: spark_queue_demo)")
    p.add_argument("--events", type=int, help="events to produce in this run")
    p.add_argument(
        "--duration", type=float, metavar="SECONDS",
        help="produce for about this long (events = events_per_second x SECONDS)",
    )
    p.add_argument("--events-per-second", type=int, help="producer rate")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from spark_queue.connector.session import conf_dir
    from spark_queue.demo import config as demo_config
    from spark_queue.demo.run import run_demo

    path = args.config or str(conf_dir() / "demo.toml")
    config = demo_config.load(path, {"dir": args.dir, "events": args.events,
                                     "events_per_second": args.events_per_second})
    if args.duration is not None:
        config = dataclasses.replace(
            config, events=max(1, int(config.events_per_second * args.duration))
        )
    summary = run_demo(config, out=lambda line: print(line, flush=True))
    print()
    emit_object(summary, as_json=False)
    store = config.store_path
    print(f"""
Look at the results:
  sqliteq topics {store}
  sqliteq consumers {store}
  sqliteq queue stats {store}
  sqliteq tail {store} {config.topic} --from latest --follow
  spark.read.format("delta").load("{os.path.abspath(config.bronze_path)}").show()
Run `make demo` again: the queries resume from their checkpoints in {config.dir}/checkpoints.""")
    ok = summary["rows_in_delta"] == summary["events_in_topic"] == summary[
        "distinct_offsets_in_delta"]
    return 0 if ok else 1
