"""Query start: ``start()`` -> first trigger of sqliteq beside a Python source that does no I/O.

Spark starts a Python process for every Python streaming source's planning and
imports pyspark and pyarrow in it; :func:`no_io_source` pays that and nothing
else (constant offsets, one row), so ``sqliteq`` minus it is what this package
adds to a query's start. :func:`alternating_starts` starts the sources in
turns in one session (load hits them alike) and :func:`planning_steps` times
each step of sqliteq's planning process in a fresh interpreter, part by part
(BENCHMARKS.md, "Stream start").
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from benchmarks import results

NO_IO = "sqliteq_bench_noio"
RATE, NO_IO_LABEL, SQLITEQ = "rate", "no-I/O Python source", "sqliteq, defaults"
FOREACH = ", to the first foreachBatch call"


def no_io_source():
    """The DataSource class (register it with ``spark.dataSource.register``)."""
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

    class NoIoStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        def initialOffset(self) -> dict:
            return {"offset": 0}

        # Both signatures: pyspark 4.2's (start, limit) and 4.0/4.1's ().
        def latestOffset(self, start: dict | None = None, limit: object = None) -> dict:
            return {"offset": 1}

        def prepareForTriggerAvailableNow(self) -> None:
            pass

        def partitions(self, start: dict, end: dict):
            return [InputPartition(0)]

        def read(self, partition):
            yield (0,)

        def commit(self, end: dict) -> None:
            pass

    class NoIoSource(DataSource):
        def streamReader(self, schema):
            return NoIoStreamReader()

        def schema(self) -> str:
            return "value LONG"

        @classmethod
        def name(cls) -> str:
            return NO_IO

    return NoIoSource


def add_argument(parser) -> None:
    parser.add_argument("--start-rounds", type=int, default=5,
                        help="query starts per source beside the no-I/O Python source, "
                             "alternating (default 5; 0 skips them)")
    parser.add_argument("--starts-only", action="store_true",
                        help="run only the alternating starts and the planning steps")


def run_only(args, workdir: str) -> int:
    """``--starts-only``: the starts in a session of their own, nothing else."""
    from benchmarks.report import local_session

    spark = local_session("spark_queue-bench-starts", args.cores)
    try:
        measure_and_print(spark, workdir, max(args.start_rounds, 1))
    finally:
        spark.stop()
    return 0


def as_installed() -> None:
    """Byte-compile this package as pip does when it installs the wheel. From an
    editable checkout under PYTHONDONTWRITEBYTECODE (set on the project's VM) every
    planning process compiled each module from source again at every query start:
    opening the store took 117-128 ms instead of 34-48, and the starts moved by as
    much (BENCHMARKS.md, "Stream start"). An installed package never pays it."""
    import compileall

    import spark_queue

    root = os.path.dirname(os.path.abspath(spark_queue.__file__))
    compileall.compile_dir(root, quiet=1)
    shim = os.path.join(os.path.dirname(root), "pyspark_sqliteq.py")
    if os.path.exists(shim):
        compileall.compile_file(shim, quiet=1)


def measure_and_print(spark, workdir: str, rounds: int) -> None:
    """The alternating starts (on a store of one event) and the planning steps, printed."""
    if rounds <= 0:
        return
    as_installed()
    from spark_queue.store import Store

    path = os.path.join(workdir, "starts.sqlite")
    with Store(path) as store:
        store.publish("one", "x")
    found = alternating_starts(spark, path, "one", workdir, rounds)
    print_starts(found)
    print_steps(planning_steps(path, "one"))


def alternating_starts(spark, path: str, topic: str, workdir: str,
                       rounds: int) -> dict[str, list[float]]:
    """``{label: [start() -> first trigger s, ...]}`` of ``rounds`` turns (after one
    warm-up turn) of rate, the no-I/O source and sqliteq (``topic`` of ``path``, default
    options), each with a processing-time and an ``availableNow`` trigger; and of the
    no-I/O source and sqliteq from start() to the first ``foreachBatch`` call."""
    from benchmarks.report import first_trigger_s

    if NO_IO not in _registered:
        spark.dataSource.register(no_io_source())
        _registered.add(NO_IO)
    counter = iter(range(1_000_000))
    readers = {
        RATE: lambda: spark.readStream.format("rate"),
        NO_IO_LABEL: lambda: spark.readStream.format(NO_IO),
        SQLITEQ: lambda: (spark.readStream.format("sqliteq").option("path", path)
                          .option("topic", topic)),
    }

    def start(label: str, available_now: bool) -> float:
        writer = (readers[label]().load().writeStream.format("noop")
                  .option("checkpointLocation", os.path.join(workdir, f"st{next(counter)}")))
        writer = (writer.trigger(availableNow=True) if available_now
                  else writer.trigger(processingTime="0 seconds"))
        started = time.time()
        query = writer.start()
        try:
            if available_now:
                query.awaitTermination()
            else:
                while not query.recentProgress and query.isActive:
                    time.sleep(0.005)  # the first progress event, a few ms apart
        finally:
            query.stop()
        return first_trigger_s(started, query.recentProgress)

    def first_call(label: str) -> float:
        """The second harness: start() -> the first foreachBatch call (after the first
        trigger's latestOffset and the batch's planning: what a user's code waits for)."""
        called: list[float] = []

        def record(_df, _batch_id) -> None:
            if not called:
                called.append(time.time())

        query = (readers[label]().load().writeStream.foreachBatch(record)
                 .option("checkpointLocation", os.path.join(workdir, f"st{next(counter)}"))
                 .trigger(processingTime="0 seconds"))
        started = time.time()
        running = query.start()
        try:
            while not called and running.isActive:
                time.sleep(0.005)
        finally:
            running.stop()
        return called[0] - started

    found: dict[str, list[float]] = {}
    turns = [(label, now) for now in (False, True) for label in readers
             if not (now and label == RATE)]  # rate has no end: no availableNow run
    for turn in range(rounds + 1):
        for label, available_now in turns:
            seconds = start(label, available_now)
            if turn:  # turn 0 warms the JVM and the Python workers up
                found.setdefault(label + (", availableNow" if available_now else ""),
                                 []).append(seconds)
        for label in (NO_IO_LABEL, SQLITEQ):
            seconds = first_call(label)
            if turn:
                found.setdefault(label + FOREACH, []).append(seconds)
    return found


_registered: set[str] = set()


def print_starts(found: dict[str, list[float]]) -> None:
    """Medians and spreads, and each sqliteq start against the no-I/O start of its round."""
    print("\nstart() -> first trigger, or -> first foreachBatch call (s; alternating starts "
          "in one session: median [min-max]; vs no-I/O = per round, sqliteq minus the no-I/O "
          "Python source with the same trigger: median [min-max])")
    figures: dict[str, results.Figure] = {}
    for label, values in found.items():
        twin = NO_IO_LABEL + label[len(SQLITEQ):]
        versus = ""
        if label.startswith(SQLITEQ) and twin in found:
            gaps = [ours - theirs for ours, theirs in zip(values, found[twin], strict=True)]
            spread = f"[{min(gaps):+.2f}..{max(gaps):+.2f}]"
            versus = f"vs no-I/O {statistics.median(gaps):+.2f} {spread}"
        print(f"  {label:<52} {statistics.median(values):5.2f} "
              f"[{min(values):.2f}-{max(values):.2f}]  {versus}")
        figures[f"{label} median s"] = round(statistics.median(values), 2)
        figures[f"{label} min, max s"] = [round(min(values), 2), round(max(values), 2)]
        if versus:
            figures[f"{label} - no-I/O, median s"] = round(statistics.median(gaps), 2)
    results.record("stream start: sqliteq beside a no-I/O Python source", figures)


def planning_steps(path: str, topic: str, repeats: int = 5) -> dict[str, float]:
    """Median seconds of each step sqliteq's planning process takes (default options),
    each repeat in a fresh interpreter that first imports what Spark's runner imports."""
    runs = [json.loads(subprocess.run(
        [sys.executable, "-c", _STEPS, path, topic], check=True, capture_output=True,
        text=True).stdout) for _ in range(repeats)]
    return {step: statistics.median(run[step] for run in runs) for step in runs[0]}


_STEPS = """
import json, sys, time
marks = [("start", time.perf_counter())]
def mark(name):
    marks.append((name, time.perf_counter()))
import pyspark.sql.streaming.python_streaming_source_runner
mark("Spark's runner imports (pyspark, pyarrow)")
from spark_queue.connector.datasource import SqliteQueueDataSource
mark("unpickle the source: import the DataSource")
source = SqliteQueueDataSource({"path": sys.argv[1], "topic": sys.argv[2]})
reader = source.streamReader(source.schema())
mark("streamReader(): options, the reader class")
reader.prepareForTriggerAvailableNow()
mark("prepareForTriggerAvailableNow (availableNow only): open the store")
start = reader.initialOffset()
mark("initialOffset (first trigger)")
end = reader.latestOffset(start, reader.getDefaultReadLimit())
mark("latestOffset (first trigger)")
reader.partitions(start, end)
mark("partitions: the first batch's rows read on the driver")
print(json.dumps({name: t - marks[i][1] for i, (name, t) in enumerate(marks[1:])}))
"""


def print_steps(steps: dict[str, float]) -> None:
    print("\nsqliteq's planning process, step by step (ms, median of fresh interpreters; "
          "before the first trigger: the first three, and the fourth under availableNow)")
    for name, seconds in steps.items():
        print(f"  {name:<68} {seconds * 1000:7.1f}")
    results.record("stream start: sqliteq's planning process, step by step",
                   {f"{name} ms": round(seconds * 1000, 1) for name, seconds in steps.items()})
