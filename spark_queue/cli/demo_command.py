"""``sqliteq demo``: the main job a new user runs first (README command 1).

A background producer publishes sensor readings into a store under
``./spark_queue_demo``; a local Spark streams them into a Delta table and
enqueues alerts; worker threads process the alerts. Settings come from
``conf/demo.toml``; flags override them. pyspark is imported only here.
"""

from __future__ import annotations

import argparse
import os
import sys

from spark_queue.cli import numbers
from spark_queue.cli.output import emit_object
from spark_queue.errors import OptionError


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo", help="run the demo pipeline (producer -> Spark -> Delta and a queue -> workers)"
    )
    p.add_argument("--config", help="settings file ('-' for stdin; default: conf/demo.toml)")
    p.add_argument("--dir", help="working directory (default from the config: spark_queue_demo)")
    p.add_argument("--events", type=numbers.positive, help="events to produce in this run")
    p.add_argument(
        "--duration", type=numbers.number(0, 86_400 * 365), metavar="SECONDS",
        help="produce for about this long (events = events_per_second x SECONDS)",
    )
    p.add_argument("--events-per-second", type=numbers.positive, help="producer rate")
    p.add_argument(
        "--replica-url", metavar="URL",
        help="restore the store from this replica if it is missing, and replicate it while "
             "the demo runs (file:///dir or s3://bucket/prefix; the replicate extra)",
    )
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from spark_queue.demo import config as demo_config
    from spark_queue.demo.run import run_demo
    from spark_queue.spark.session import conf_dir

    if args.config not in (None, "-") and not os.path.isfile(args.config):
        raise OptionError(
            f"--config {args.config!r} is not a file; give a TOML settings file like "
            "conf/demo.toml, or leave --config out."
        )
    path = args.config or str(conf_dir() / "demo.toml")
    config = demo_config.load_config(path, {"dir": args.dir, "events": args.events,
                                     "events_per_second": args.events_per_second,
                                     "replica_url": args.replica_url})
    if args.duration is not None:
        import dataclasses  # here, not at the top: `sqliteq --help` never needs it

        config = dataclasses.replace(
            config, events=max(1, int(config.events_per_second * args.duration))
        )
    summary = run_demo(config, out=lambda line: print(line, flush=True))
    print()
    emit_object(summary, as_json=False)
    store, cli = config.store_path, _sqliteq_command()
    bronze_format, bronze_path = summary["bronze_table"].split(" ", 1)
    bronze = os.path.abspath(bronze_path)
    # Where the printed Python's session sends the JVM's output (Ivy's resolution of
    # Delta's jars, ~86 lines, and Spark's log), as the demo's own session does.
    spark_log = os.path.abspath(os.path.join(config.dir, "spark.log"))
    print(f"""
Alerts the workers handled are in {summary["alerts_log"]}. Saved consumer offsets
(`sqliteq consumers`) are advisory: Spark's checkpoints hold the truth.

Look at the results (shell):
  {cli} topics {store}
  {cli} consumers {store}
  {cli} queue stats {store}
  {cli} tail {store} {config.topic} --from -5
Look at the table in Python (paste into {_python_command()}):
from spark_queue.spark import get_or_create
spark = get_or_create(jvm_log="{spark_log}")
spark.read.format("{bronze_format}").load("file:{bronze}").show()

Run the same command again: both queries resume from their checkpoints in
{os.path.join(config.dir, "checkpoints")}.""")
    ok = summary["rows_in_bronze"] == summary["events_in_topic"] == summary[
        "distinct_offsets_in_bronze"]
    return 0 if ok else 1


def _sqliteq_command() -> str:
    """How to run this CLI from the user's shell: plain ``sqliteq`` when it is on PATH as
    this very program, else the script beside this interpreter (``.venv/bin/sqliteq``)."""
    import shutil

    beside = os.path.join(os.path.dirname(sys.executable), "sqliteq")
    found = shutil.which("sqliteq")
    if found and os.path.realpath(found) == os.path.realpath(beside):
        return "sqliteq"
    if not os.path.exists(beside):
        return f"{sys.executable} -m spark_queue"
    return _as_typed(beside)


def _python_command() -> str:
    """How to start this interpreter (it has spark_queue and pyarrow): ``python`` when that is
    it on PATH (an active venv), else its path. Not symlinks resolved: a venv's python links
    to the system's, which has neither."""
    import shutil

    found = shutil.which("python")
    if found and os.path.abspath(found) == os.path.abspath(sys.executable):
        return "python"
    return _as_typed(sys.executable)


def _as_typed(path: str) -> str:
    """``path`` as a shell runs it: relative below the current directory, else absolute."""
    relative = os.path.relpath(path)
    if relative.startswith(".."):
        return path
    return relative if os.sep in relative else os.path.join(".", relative)
