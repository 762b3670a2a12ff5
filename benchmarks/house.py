"""``python -m benchmarks house --before PATH``: the read and the sink of this checkout
against an older tree's, in instructions (callgrind), so a restructuring can be held to
"not slower" on a shared machine.

Timed runs of the Spark paths on two shared cores moved 2x between rounds of ONE tree
(BENCHMARKS.md, round 6), so they bound nothing to 3 %. What a restructuring of the
connector can change is its own Python work on the Spark paths: planning a micro-batch
(``latestOffset``, ``partitions``), reading a partition, encoding a sink task's rows, the
driver's commit; Spark's JVM work is the same code for both trees. Each path runs in its
own process (:mod:`benchmarks.house_paths`, through Spark's Python Data Source calls)
under ``valgrind --tool=callgrind``, whose count of instructions repeats whatever else the
machine does; a run of the same process that stops before the path (imports, the source,
the rows built) is subtracted. Both trees run with the compiled Arrow reader of this
checkout when it is built (its C source is the reader's, not the restructuring's).
The count must not depend on time. So every run has ``PYTHONHASHSEED=0`` (a random seed
reorders sets and dicts of strings, and the work with them) and one OpenBLAS thread
(numpy's, imported with pyspark: its idle threads spin, 13.5 M instructions in one sink
run, as long as the machine keeps them waiting). The same tree's counts moved 6-15 %
between runs before; with both, a process's count repeats to 0.001 % and a path's
(two counts subtracted) to 0.2 %.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from benchmarks import results

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORKER = ROOT / "benchmarks" / "house_paths.py"
PATHS = {
    "stream": "stream read: latestOffset + partitions + read + commit per micro-batch",
    "batch": "batch read: partitions + read",
    "sink": "sink: write (encode, Arrow IPC) per task + the driver's commit",
}
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--before", required=True,
                        help="a checkout of the older tree (git worktree add DIR COMMIT)")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--batch-rows", type=int, default=1_000,
                        help="rows per micro-batch (stream) and per Arrow batch (sink)")
    parser.add_argument("--paths", nargs="+", choices=list(PATHS), default=list(PATHS),
                        help="the paths to count (default: all three)")


def _instructions(tree: pathlib.Path, phase: str, stores: pathlib.Path,
                  args: argparse.Namespace, *, base: bool = False) -> int:
    work = stores / "run"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(stores / "made", work)
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               sys.executable, str(WORKER), phase, "--store", str(work / "source.sqlite"),
               "--sink-store", str(work / "sink.sqlite"), "--events", str(args.events),
               "--batch-rows", str(args.batch_rows), *(["--base"] if base else [])]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = _COLLECTED.findall(done.stderr)
    if done.returncode != 0 or not found:
        raise SystemExit(f"house: {phase} in {tree} failed ({done.returncode}):\n"
                         f"{done.stderr[-2000:]}")
    return int(found[-1])


def _measure(tree: pathlib.Path, args: argparse.Namespace) -> dict[str, int]:
    """Instructions of each path in ``tree`` (the base run subtracted)."""
    with tempfile.TemporaryDirectory(prefix="sq-house-") as scratch:
        stores = pathlib.Path(scratch)
        made = stores / "made"
        made.mkdir()
        subprocess.run([sys.executable, str(WORKER), "setup", "--store",
                        str(made / "source.sqlite"), "--sink-store", str(made / "sink.sqlite"),
                        "--events", str(args.events)],
                       env={**os.environ, "PYTHONPATH": str(tree)}, check=True)
        counts = {}
        for phase in args.paths:
            counts[phase] = (_instructions(tree, phase, stores, args)
                             - _instructions(tree, phase, stores, args, base=True))
            print(f"  {tree.name}: {phase} {counts[phase]:,} instructions", flush=True)
        return counts


def _compiled_reader(tree: pathlib.Path) -> None:
    """Give ``tree`` this checkout's built Arrow reader, so both trees read alike."""
    for built in (ROOT / "spark_queue" / "store" / "streams").glob("_arrow_columns.*.so"):
        target = tree / "spark_queue" / "store" / "streams" / built.name
        if not target.exists():
            shutil.copy2(built, target)


def run(args: argparse.Namespace) -> int:
    if shutil.which("valgrind") is None:
        raise SystemExit("house: needs valgrind (Debian's package valgrind)")
    before = pathlib.Path(args.before).resolve()
    if not (before / "spark_queue").is_dir():
        raise SystemExit(f"house: --before {args.before!r} holds no spark_queue/; give a "
                         "checkout of the older tree (git worktree add DIR COMMIT)")
    _compiled_reader(before)
    now = _measure(ROOT, args)
    old = _measure(before, args)
    title = (f"house: instructions per path, {args.events:,} events in batches of "
             f"{args.batch_rows:,}, this checkout against {before.name} (callgrind)")
    print(f"\n{title}")
    print(f"{'path':<76} {'before':>14} {'now':>14} {'speed':>7}")
    figures: dict[str, results.Figure] = {}
    for phase in args.paths:
        label = PATHS[phase]
        speed = old[phase] / now[phase]
        print(f"{label:<76} {old[phase]:>14,} {now[phase]:>14,} {speed:>6.3f}x")
        figures[f"{phase} instructions before"] = float(old[phase])
        figures[f"{phase} instructions now"] = float(now[phase])
        figures[f"{phase} speed vs before"] = round(speed, 3)
    if list(args.paths) != list(PATHS):
        print("(some paths only: not recorded in benchmarks/results.json)")
        return 0
    results.record("house: instructions per path (callgrind)", figures)
    return 0
