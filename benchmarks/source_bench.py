"""Source benchmark: format("sqliteq") against Spark's rate source and the raw store read.

All in one run, on one store of N events of ~100 bytes:

- raw store read: ``Store.read_arrow`` of the whole range in this process
  (the limit for one reader: SQLite's row decode plus building Arrow columns).
- in-process ``read_partition``: the executor-side code of the source (store
  read + Kafka-shaped Arrow batches) without Spark, to separate our Python
  cost from Spark's.
- Spark stream ``sqliteq`` -> ``noop`` (one availableNow micro-batch,
  checkpoint included), the executor read path and the driver-shipped path.
- Spark stream ``rate-micro-batch`` (N rows in one micro-batch) with a
  100-byte string column, a long and a timestamp -> ``noop``.
- the defaults: a batch read of the N events with no option but the topic,
  beside the same read split into 1, 2, 4 and 8 tasks (the best of those is the
  tuned split); and an ``availableNow`` stream with no option over
  ``--available-now-events`` (2M) events, whose wall clock (query start
  included) is set beside its in-batch time, with its ``start()`` -> first
  trigger beside the ``rate-micro-batch`` query's.

- in alternating rounds (:mod:`benchmarks.source_rounds`), medians of the
  in-batch time of rate, of a no-I/O Python stream yielding prebuilt batches (the
  ceiling of Spark's Python Data Source API), and of sqliteq's two read paths at the
  default split and at ``2 x cores`` tasks.

Every streaming run also reports the time from ``start()`` to its first
trigger (the first progress event's trigger timestamp): the query's stand-up;
:mod:`benchmarks.starts` then sets sqliteq's beside a Python source
that does no I/O, in alternating starts, and times the planning process step
by step.

With ``--kafka-bootstrap HOST:PORT`` (:mod:`benchmarks.kafka_broker`), the same
events (values only) in a one-partition Kafka topic (one ordered log, like a
sqliteq topic), read by Spark's Kafka source in the same session: an
``availableNow`` stream into ``noop`` and a batch read, both split into as
many tasks as the sqliteq rows (``minPartitions``), and the batch read at
Kafka's default split (one task per topic partition).

Latency (publish -> rows in ``foreachBatch``) is ``python -m benchmarks
latency`` (:mod:`benchmarks.latency`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from benchmarks import kafka_broker, results, source_rounds
from benchmarks import starts as start_bench


def _ceiling_source():
    """A Python data source that yields one prebuilt Kafka-shaped Arrow batch over and over:
    the most any Python data source can deliver through Spark here (no I/O, no conversion)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class CeilingReader(DataSourceReader):
        def __init__(self, rows: int, parts: int, value_bytes: int):
            self.rows, self.parts, self.value_bytes = rows, parts, value_bytes

        def partitions(self):
            return [InputPartition(i) for i in range(self.parts)]

        def read(self, partition):
            return source_rounds.ceiling_batches(self.rows, self.parts, self.value_bytes)

    class CeilingSource(DataSource):
        @classmethod
        def name(cls):
            return "sqliteq_bench_ceiling"

        def schema(self):
            return source_rounds.ceiling_schema()

        def reader(self, schema):
            o = self.options
            return CeilingReader(int(o["rows"]), int(o["parts"]), int(o["valueBytes"]))

    return CeilingSource


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2, help="best of N for each path")
    parser.add_argument("--cores", type=int, default=2, help="local[N] for Spark")
    parser.add_argument("--available-now-events", type=int, default=2_000_000,
                        help="events for the default availableNow stream (default 2000000)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="alternating rounds of the in-batch comparison against rate and "
                             "a no-I/O Python stream (default 5; 0 skips it)")
    kafka_broker.add_argument(parser)
    start_bench.add_argument(parser)


def run(args: argparse.Namespace) -> int:
    return kafka_broker.run_with_broker(args, "sq-bench-source-", _run)


def _timed(body) -> float:
    started = time.perf_counter()
    body()
    return time.perf_counter() - started


def _run(args: argparse.Namespace, workdir: str, kafka: kafka_broker.Kafka | None) -> int:
    if args.starts_only:
        return start_bench.run_only(args, workdir)
    from benchmarks.report import (
        first_trigger_s,
        in_batch_seconds,
        local_session,
        print_table,
    )
    from spark_queue.store import Store

    n = args.events
    path = os.path.join(workdir, "bench.sqlite")
    with Store(path) as store:
        pad = "x" * (args.value_bytes - 11)
        store.publish_many("bench", (f"{i:010d}-{pad}" for i in range(n)))
        store.publish_many("backlog", (f"{i:010d}-{pad}" for i in range(args.available_now_events)))

    # -- without Spark ---------------------------------------------------------
    from spark_queue.connector.source.partition_reader import read_partition
    from spark_queue.connector.source.partitions import StoreRangePartition
    from spark_queue.connector.source.read_shape import read_shape
    from spark_queue.connector.source.source_options import parse_source_options
    from spark_queue.connector.source.source_schema import default_schema

    def raw_read() -> None:
        with Store(path) as store:
            assert store.read_arrow("bench", 0).num_rows == n

    options = parse_source_options({"path": path, "topic": "bench"}, streaming=True)
    schema = default_schema(options)
    st = os.stat(path)
    import socket

    part = StoreRangePartition("bench", 0, n, socket.gethostname(), (st.st_dev, st.st_ino),
                               read_shape(options, schema))

    def in_process() -> None:
        assert sum(b.num_rows for b in read_partition(options, schema, part)) == n

    raw_s = min(_timed(raw_read) for _ in range(args.repeats))
    partition_s = min(_timed(in_process) for _ in range(args.repeats))

    # -- Spark -----------------------------------------------------------------
    spark = local_session("spark_queue-bench-source", args.cores, kafka_broker.session_conf(kafka))
    counter = iter(range(1_000_000))
    tasks = 2 * args.cores
    starts: dict[str, list[float]] = {}  # start() -> first trigger, per stream

    def timed_start(label: str, query):
        """Start ``query`` and wait for its end: (wall s, in-batch s, its progress)."""
        started_epoch = time.time()
        started = time.perf_counter()
        q = query.start()
        q.awaitTermination()
        elapsed = time.perf_counter() - started
        starts.setdefault(label, []).append(first_trigger_s(started_epoch, q.recentProgress))
        return elapsed, in_batch_seconds(q.recentProgress), q.recentProgress

    def timed_stream(label: str, query) -> tuple[float, float]:
        """(wall s, in-batch s) of a run that must read all ``n`` events."""
        elapsed, batch_s, progress = timed_start(label, query)
        rows = sum(p["numInputRows"] for p in progress)
        assert rows == n, f"{label} read {rows} rows, expected {n}"
        return elapsed, batch_s

    def default_stream() -> tuple[float, float]:
        checkpoint = os.path.join(workdir, f"ck{next(counter)}")
        query = (spark.readStream.format("sqliteq").option("path", path)
                 .option("topic", "backlog").load()
                 .writeStream.format("noop").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True))
        wall_s, batch_s, progress = timed_start("sqliteq, defaults", query)
        rows = sum(p["numInputRows"] for p in progress)
        assert rows == args.available_now_events, f"sqliteq read {rows} rows"
        return wall_s, batch_s

    def split_batch(tasks: int | None) -> float:
        """A batch read of the N events in ``tasks`` tasks; None: the default split."""
        reader = spark.read.format("sqliteq").option("path", path).option("topic", "bench")
        if tasks is not None:
            reader = reader.option("rowsPerPartition", -(-n // tasks))
        df = reader.load()
        return _timed(lambda: df.write.format("noop").mode("overwrite").save())

    def sqliteq_stream(read_path: str) -> tuple[float, float]:
        checkpoint = os.path.join(workdir, f"ck{next(counter)}")
        query = (
            spark.readStream.format("sqliteq").option("path", path).option("topic", "bench")
            .option("readPath", read_path).option("rowsPerPartition", -(-n // tasks))
            .load().writeStream.format("noop").option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
        )
        return timed_stream(f"sqliteq, readPath={read_path}", query)

    def rate_stream() -> tuple[float, float]:
        checkpoint = os.path.join(workdir, f"ck{next(counter)}")
        query = (
            source_rounds.rate_frame(spark, n, args.cores, args.value_bytes)
            .writeStream.format("noop").option("checkpointLocation", checkpoint)
            .trigger(once=True)
        )
        return timed_stream("rate-micro-batch", query)

    def ceiling_batch() -> float:
        df = (spark.read.format("sqliteq_bench_ceiling").option("rows", n)
              .option("parts", 2 * args.cores).option("valueBytes", args.value_bytes).load())
        return _timed(lambda: df.write.format("noop").mode("overwrite").save())

    def sqliteq_batch() -> float:
        df = (spark.read.format("sqliteq").option("path", path).option("topic", "bench")
              .option("rowsPerPartition", -(-n // tasks)).load())
        return _timed(lambda: df.write.format("noop").mode("overwrite").save())

    if kafka:
        kafka_topic = kafka.new_topic("source")
        kafka.produce(kafka_topic, [f"{i:010d}-{pad}".encode() for i in range(n)])

    def kafka_stream() -> tuple[float, float]:
        assert kafka is not None  # called only with a broker
        query = (spark.readStream.format("kafka").options(**kafka.source_options(kafka_topic))
                 .option("minPartitions", tasks).load()
                 .writeStream.format("noop").trigger(availableNow=True)
                 .option("checkpointLocation", os.path.join(workdir, f"ck{next(counter)}")))
        return timed_stream("Kafka", query)

    def kafka_batch(split: bool) -> float:
        assert kafka is not None  # called only with a broker
        reader = (spark.read.format("kafka").options(**kafka.source_options(kafka_topic))
                  .option("endingOffsets", "latest"))
        if split:
            reader = reader.option("minPartitions", tasks)
        df = reader.load()
        return _timed(lambda: df.write.format("noop").mode("overwrite").save())

    spark.dataSource.register(_ceiling_source())
    sqliteq_stream("executor")  # warm-up: JVM, Python workers, imports
    rate_stream()
    ceiling_batch()
    if kafka:
        kafka_stream()
        kafka_batch(True)
    starts.clear()  # the warm-up runs' starts are not counted
    executor_s, executor_batch_s = _best(sqliteq_stream("executor") for _ in range(args.repeats))
    driver_s, _ = _best(sqliteq_stream("driver") for _ in range(args.repeats))
    rate_s, _ = _best(rate_stream() for _ in range(args.repeats))
    batch_s = min(sqliteq_batch() for _ in range(args.repeats))
    ceiling_s = min(ceiling_batch() for _ in range(args.repeats))
    if kafka:
        kafka_s, kafka_batch_s = _best(kafka_stream() for _ in range(args.repeats))
        kafka_read_s = min(kafka_batch(True) for _ in range(args.repeats))
        kafka_default_s = min(kafka_batch(False) for _ in range(args.repeats))
    default_stream()  # warm-up of its Python processes' file cache, as for the others
    starts.pop("sqliteq, defaults")
    default_s, default_batch_s = _best(default_stream() for _ in range(args.repeats))
    splits = (None, 1, 2, 4, 8)
    split_s = {tasks: float("inf") for tasks in splits}
    for _ in range(args.repeats):  # the splits take turns, so load hits them alike
        for tasks in splits:
            split_s[tasks] = min(split_s[tasks], split_batch(tasks))
    rounds = source_rounds.measure(spark, path, "bench", n, args.cores, args.value_bytes,
                                   workdir, args.rounds) if args.rounds else {}
    # Printed at once: the alternating starts are a table of their own.
    start_bench.measure_and_print(spark, workdir, args.start_rounds)
    spark.stop()

    print(f"\nsource: {n:,} events of {args.value_bytes} bytes, local[{args.cores}], "
          f"best of {args.repeats}")
    print_table(
        "Throughput, wall clock (rows/s; availableNow, one micro-batch into noop, "
        "query start included)",
        [
            ("rate-micro-batch -> noop", n / rate_s, "rate-micro-batch -> noop"),
            ("raw Store.read_arrow (1 process)", n / raw_s, "raw Store.read_arrow (1 process)"),
            ("sqliteq -> noop (readPath=executor)", n / executor_s, "rate-micro-batch -> noop"),
            ("sqliteq -> noop (readPath=executor) ", n / executor_s,
             "raw Store.read_arrow (1 process)"),
            ("sqliteq -> noop (readPath=driver)", n / driver_s, "rate-micro-batch -> noop"),
            ("sqliteq batch read -> noop", n / batch_s, "rate-micro-batch -> noop"),
            ("ceiling: prebuilt Arrow batches, Python DS", n / ceiling_s,
             "rate-micro-batch -> noop"),
            ("sqliteq -> noop vs that ceiling", n / executor_s,
             "ceiling: prebuilt Arrow batches, Python DS"),
            ("read_partition in process (no Spark)", n / partition_s,
             "raw Store.read_arrow (1 process)"),
        ],
    )
    if kafka:
        stream, batch = "Kafka -> noop (availableNow)", f"Kafka batch read, {tasks} tasks"
        print(f"\n{kafka.describe()}")
        print_table(
            f"source vs Kafka: the same events, one Kafka partition read as {tasks} tasks "
            f"(minPartitions) like sqliteq's {tasks}",
            [
                (f"{stream}, in-batch", n / kafka_batch_s, f"{stream}, in-batch"),
                ("sqliteq -> noop (readPath=executor), in-batch", n / executor_batch_s,
                 f"{stream}, in-batch"),
                (f"{stream}, wall", n / kafka_s, f"{stream}, wall"),
                ("sqliteq -> noop (readPath=executor), wall", n / executor_s, f"{stream}, wall"),
                (batch, n / kafka_read_s, batch),
                ("sqliteq batch read -> noop", n / batch_s, batch),
                ("sqliteq batch read, defaults", n / split_s[None], batch),
                ("Kafka batch read, default split (1 task)", n / kafka_default_s, batch),
            ],
        )
    _print_defaults(n, args.available_now_events, split_s, default_s, default_batch_s, starts)
    if rounds:
        source_rounds.print_rounds(n, rounds)
    return 0


def _print_defaults(n: int, backlog: int, split_s: dict, default_s: float,
                    default_batch_s: float, starts: dict[str, list[float]]) -> None:
    from benchmarks.report import print_table

    tuned = min((t for t in split_s if t is not None), key=lambda t: split_s[t])
    best = f"batch read, best split ({tuned} tasks)"
    print_table(
        f"The defaults: a batch read of {n:,} events with no option but the topic, against "
        "the same read split into 1, 2, 4 and 8 tasks (rowsPerPartition)",
        [(best, n / split_s[tuned], best),
         ("batch read, defaults", n / split_s[None], best),
         *((f"batch read, {t} task(s)", n / split_s[t], best)
           for t in split_s if t not in (None, tuned))],
    )
    print_table(
        f"The defaults: availableNow over {backlog:,} events with no option but the topic",
        [("in-batch (triggerExecution)", backlog / default_batch_s,
          "in-batch (triggerExecution)"),
         ("wall (start() to the end)", backlog / default_s, "in-batch (triggerExecution)")],
    )
    rate = statistics.median(starts["rate-micro-batch"])
    print("\nstart() -> first trigger (s, median of every timed run; vs rate = median minus "
          "rate-micro-batch's)")
    figures: dict[str, results.Figure] = {}
    for label, seconds in starts.items():
        median = statistics.median(seconds)
        runs = ", ".join(f"{s:.2f}" for s in seconds)
        print(f"  {label:<36} {median:6.2f}  vs rate {median - rate:+6.2f}  ({runs})")
        figures[f"{label}: median s"] = round(median, 2)
    results.record("source: start() -> first trigger", figures)


def _best(runs) -> tuple[float, float]:
    """The run with the best wall time: (wall seconds, in-batch seconds)."""
    return min(runs)
