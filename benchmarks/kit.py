"""``python -m benchmarks kit``: what a test written with spark_queue.testing costs.

In one local session, ``--tests`` times each (medians):

- an empty ``availableNow`` query (sqliteq's empty topic to Spark's ``noop`` sink, started and
  awaited): the least a streaming test on the store can cost, the floor;
- docs/testing.md's first test: ``StreamTest(spark, big_orders)``, two rows added,
  ``check_answer``, closed (its store, query and temp files made and removed each time);
- the same test written with Spark's own ``MemoryStream`` (Classic only: it lives in the
  JVM, reached here through py4j), a memory sink and ``processAllAvailable``.

The kit's target: its median test at most 0.5 s over the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from benchmarks import results
from benchmarks.report import local_session
from spark_queue.store import Store

ORDER = "id INT, sku STRING, amount DOUBLE"
ORDERS = [{"id": 1, "sku": "a", "amount": 250.0}, {"id": 2, "sku": "b", "amount": 5.0}]
TARGET_S = 0.5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tests", type=int, default=15, help="runs of each test (medians)")
    parser.add_argument("--cores", type=int, default=2, help="local[N] for Spark")


def big_orders(df: Any) -> Any:
    from pyspark.sql import functions as F

    orders = df.select(F.from_json(F.col("value").cast("string"), ORDER).alias("o"))
    return orders.select("o.*").where("amount >= 100").select("id", "amount")


def run(args: argparse.Namespace) -> int:
    workdir = tempfile.mkdtemp(prefix="sq-bench-kit-")
    try:
        return _run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run(args: argparse.Namespace, workdir: str) -> int:
    import pyspark

    from spark_queue.testing import StreamTest

    spark = local_session("spark_queue-bench-kit", args.cores)
    empty = os.path.join(workdir, "empty.sqlite")
    with Store(empty) as store:
        store.topic("in").create()  # an empty topic, as a test's before its first add
    counter = iter(range(10**6))

    def empty_query() -> None:
        query = (spark.readStream.format("sqliteq").option("path", empty)
                 .option("subscribe", "in").load().writeStream.format("noop")
                 .option("checkpointLocation", os.path.join(workdir, f"c{next(counter)}"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()

    def kit_test() -> None:
        with StreamTest(spark, big_orders) as test:
            test.add(ORDERS).check_answer([(1, 250.0)])

    memory = MemoryStreamTest(spark, workdir)
    cases: dict[str, Callable[[], None]] = {
        "empty availableNow query (the floor)": empty_query,
        "StreamTest: add, check_answer": kit_test,
        "MemoryStream: addData, processAllAvailable, collect": memory.test,
    }
    for case in cases.values():  # the first run of each pays Python workers, class loads
        case()
    times: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(args.tests):  # interleaved, so a busy moment of the machine hits all three
        for label, case in cases.items():
            started = time.perf_counter()
            case()
            times[label].append(time.perf_counter() - started)
    medians = {label: statistics.median(found) for label, found in times.items()}
    floor = medians["empty availableNow query (the floor)"]
    print(f"kit: one test, median of {args.tests}, pyspark {pyspark.__version__}, "
          f"local[{args.cores}], wall clock")
    for label, median in medians.items():
        print(f"  {label:<55} {median:6.2f} s  ({median - floor:+.2f} s over the floor)")
    over = medians["StreamTest: add, check_answer"] - floor
    print(f"  StreamTest over the floor: {over:.2f} s (target <= {TARGET_S} s: "
          f"{'met' if over <= TARGET_S else 'NOT met'})")
    figures: dict[str, results.Figure] = {f"{label} median s": median
                                          for label, median in medians.items()}
    figures.update({f"{label} runs s": found for label, found in times.items()})
    figures["StreamTest over the floor s"] = over
    results.record(f"kit: one test, pyspark {pyspark.__version__}", figures)
    spark.stop()
    return 0


class MemoryStreamTest:
    """The same test with Spark's Scala MemoryStream through py4j (no Python API for it)."""

    def __init__(self, spark: Any, workdir: str) -> None:
        self.spark, self.workdir = spark, workdir
        jvm = spark.sparkContext._jvm
        streaming = jvm.org.apache.spark.sql.execution.streaming
        # Spark 4.1 moved it to execution.streaming.runtime.
        self.memory_stream = (streaming.runtime.MemoryStream if _exists(jvm,
                              "org.apache.spark.sql.execution.streaming.runtime.MemoryStream")
                              else streaming.MemoryStream)
        self.runs = 0

    def test(self) -> None:
        from pyspark.sql.classic.dataframe import DataFrame

        jvm = self.spark.sparkContext._jvm
        stream = self.memory_stream.apply(jvm.org.apache.spark.sql.Encoders.STRING(),
                                          self.spark._jsparkSession.sqlContext())
        self.runs += 1
        name = f"memory_stream_{self.runs}"
        query = (big_orders(DataFrame(stream.toDF(), self.spark)).writeStream.format("memory")
                 .queryName(name)
                 .option("checkpointLocation", os.path.join(self.workdir, f"m{self.runs}"))
                 .start())
        try:
            values = jvm.java.util.ArrayList()
            for order in ORDERS:
                values.add(json.dumps(order))
            stream.addData(jvm.scala.jdk.javaapi.CollectionConverters.asScala(values))
            query.processAllAvailable()
            assert [tuple(row) for row in self.spark.table(name).collect()] == [(1, 250.0)]
        finally:
            query.stop()
            self.spark.sql(f"DROP VIEW IF EXISTS {name}")


def _exists(jvm: Any, class_name: str) -> bool:
    try:
        jvm.java.lang.Class.forName(class_name)
    except Exception:  # py4j's error for ClassNotFoundException
        return False
    return True
