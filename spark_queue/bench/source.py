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
- latency: one event published every ``--interval-ms`` while a trigger-0
  query runs; publish -> rows in hand inside ``foreachBatch``, p50/p95; and
  the fixed cost of a one-row micro-batch from Spark's progress
  (``durationMs``), split into its phases.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time


def _ceiling_source():
    """A Python data source that yields one prebuilt Kafka-shaped Arrow batch over and over:
    the most any Python data source can deliver through Spark here (no I/O, no conversion)."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class CeilingReader(DataSourceReader):
        def __init__(self, rows: int, parts: int, value_bytes: int):
            self.rows, self.parts, self.value_bytes = rows, parts, value_bytes

        def partitions(self):
            return [InputPartition(i) for i in range(self.parts)]

        def read(self, partition):
            from pyspark.sql.pandas.types import to_arrow_schema

            from spark_queue.connector.source_options import parse_source_options
            from spark_queue.connector.source_schema import default_schema

            opts = parse_source_options({"path": "-", "topic": "t"}, streaming=False)
            target = to_arrow_schema(default_schema(opts), timezone="UTC")
            size = 50_000
            value = b"x" * self.value_bytes
            batch = pa.RecordBatch.from_arrays(
                [
                    pa.nulls(size, pa.binary()),
                    pa.array([value] * size, pa.binary()),
                    pa.array(["bench"] * size),
                    pa.array([0] * size, pa.int32()),
                    pa.array(range(size), pa.int64()),
                    pa.array([0] * size, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                    pa.array([0] * size, pa.int32()),
                ],
                schema=target,
            )
            left = self.rows // self.parts
            while left > 0:
                yield batch.slice(0, min(size, left))
                left -= size

    class CeilingSource(DataSource):
        @classmethod
        def name(cls):
            return "sqliteq_bench_ceiling"

        def schema(self):
            from spark_queue.connector.source_options import parse_source_options
            from spark_queue.connector.source_schema import default_schema

            opts = parse_source_options({"path": "-", "topic": "t"}, streaming=False)
            return default_schema(opts)

        def reader(self, schema):
            o = self.options
            return CeilingReader(int(o["rows"]), int(o["parts"]), int(o["valueBytes"]))

    return CeilingSource


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2, help="best of N for each path")
    parser.add_argument("--cores", type=int, default=2, help="local[N] for Spark")
    parser.add_argument("--latency-events", type=int, default=60)
    parser.add_argument("--interval-ms", type=int, default=600,
                        help="publish interval; above the batch time, so batches hold one row")


def run(args: argparse.Namespace) -> int:
    workdir = tempfile.mkdtemp(prefix="sq-bench-source-")
    try:
        return _run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _timed(body) -> float:
    started = time.perf_counter()
    body()
    return time.perf_counter() - started


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _run(args: argparse.Namespace, workdir: str) -> int:
    from spark_queue.bench.report import print_table
    from spark_queue.store import Store

    n = args.events
    path = os.path.join(workdir, "bench.sqlite")
    with Store(path) as store:
        pad = "x" * (args.value_bytes - 11)
        store.publish_many("bench", (f"{i:010d}-{pad}" for i in range(n)))

    # -- without Spark ---------------------------------------------------------
    from spark_queue.connector.partition_reader import read_partition
    from spark_queue.connector.partitions import StoreRangePartition
    from spark_queue.connector.source_options import parse_source_options
    from spark_queue.connector.source_schema import default_schema

    def raw_read() -> None:
        with Store(path) as store:
            assert store.read_arrow("bench", 0).num_rows == n

    options = parse_source_options({"path": path, "topic": "bench"}, streaming=True)
    schema = default_schema(options)
    st = os.stat(path)
    import socket

    part = StoreRangePartition("bench", 0, n, socket.gethostname(), (st.st_dev, st.st_ino))

    def in_process() -> None:
        assert sum(b.num_rows for b in read_partition(options, schema, part)) == n

    raw_s = min(_timed(raw_read) for _ in range(args.repeats))
    partition_s = min(_timed(in_process) for _ in range(args.repeats))

    # -- Spark -----------------------------------------------------------------
    from spark_queue.connector.session import ensure_python_workers

    ensure_python_workers()
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{args.cores}]")
        .appName("spark_queue-bench-source")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "3g")
        .config("spark.sql.shuffle.partitions", str(args.cores))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    counter = iter(range(1_000_000))

    def sqliteq_stream(read_path: str) -> float:
        checkpoint = os.path.join(workdir, f"ck{next(counter)}")
        query = (
            spark.readStream.format("sqliteq").option("path", path).option("topic", "bench")
            .option("readPath", read_path).option("rowsPerPartition", -(-n // (2 * args.cores)))
            .load().writeStream.format("noop").option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
        )
        started = time.perf_counter()
        q = query.start()
        q.awaitTermination()
        elapsed = time.perf_counter() - started
        rows = sum(p["numInputRows"] for p in q.recentProgress)
        assert rows == n, f"sqliteq read {rows} rows, expected {n}"
        return elapsed, _in_batch_s(q)

    def rate_stream() -> float:
        checkpoint = os.path.join(workdir, f"ck{next(counter)}")
        pad_sql = f"repeat('x', {args.value_bytes - 11})"
        query = (
            spark.readStream.format("rate-micro-batch").option("rowsPerBatch", n)
            .option("numPartitions", args.cores).load()
            .selectExpr(
                f"CAST(concat(lpad(CAST(value AS STRING), 10, '0'), '-', {pad_sql}) AS BINARY)"
                " AS value", "value AS offset", "timestamp",
            )
            .writeStream.format("noop").option("checkpointLocation", checkpoint)
            .trigger(once=True)
        )
        started = time.perf_counter()
        q = query.start()
        q.awaitTermination()
        elapsed = time.perf_counter() - started
        rows = sum(p["numInputRows"] for p in q.recentProgress)
        assert rows == n, f"rate-micro-batch produced {rows} rows, expected {n}"
        return elapsed, _in_batch_s(q)

    def ceiling_batch() -> float:
        df = (spark.read.format("sqliteq_bench_ceiling").option("rows", n)
              .option("parts", 2 * args.cores).option("valueBytes", args.value_bytes).load())
        return _timed(lambda: df.write.format("noop").mode("overwrite").save())

    def sqliteq_batch() -> float:
        df = (spark.read.format("sqliteq").option("path", path).option("topic", "bench")
              .option("rowsPerPartition", -(-n // (2 * args.cores))).load())
        return _timed(lambda: df.write.format("noop").mode("overwrite").save())

    spark.dataSource.register(_ceiling_source())
    sqliteq_stream("executor")  # warm-up: JVM, Python workers, imports
    rate_stream()
    ceiling_batch()
    executor_s, executor_batch_s = _best(sqliteq_stream("executor") for _ in range(args.repeats))
    driver_s, driver_batch_s = _best(sqliteq_stream("driver") for _ in range(args.repeats))
    rate_s, rate_batch_s = _best(rate_stream() for _ in range(args.repeats))
    batch_s = min(sqliteq_batch() for _ in range(args.repeats))
    ceiling_s = min(ceiling_batch() for _ in range(args.repeats))
    own_ms = _own_per_batch_ms(path)

    latencies, one_row = _latency(spark, path, workdir, args)
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
    print("\nThe source's own work for a one-row micro-batch, in process (ms, p50 of 50): "
          + ", ".join(f"{k} {v:.2f}" for k, v in own_ms.items()))
    print_table(
        "In-batch rate (rows/s = numInputRows / triggerExecution: without query start and stop)",
        [
            ("rate-micro-batch -> noop", n / rate_batch_s, "rate-micro-batch -> noop"),
            ("sqliteq -> noop (readPath=executor)", n / executor_batch_s,
             "rate-micro-batch -> noop"),
            ("sqliteq -> noop (readPath=executor) ", n / executor_batch_s,
             "raw Store.read_arrow (1 process)"),
            ("raw Store.read_arrow (1 process)", n / raw_s, "raw Store.read_arrow (1 process)"),
            ("sqliteq -> noop (readPath=driver)", n / driver_batch_s, "rate-micro-batch -> noop"),
        ],
    )
    print(f"\nLatency publish -> rows in foreachBatch (trigger 0, {len(latencies)} events, "
          f"one every {args.interval_ms} ms): p50 {_pct(latencies, 0.5) * 1000:.0f} ms, "
          f"p95 {_pct(latencies, 0.95) * 1000:.0f} ms")
    if one_row:
        phases = sorted({k for d in one_row for k in d})
        print(f"One-row micro-batch fixed cost (Spark durationMs, over {len(one_row)} batches):")
        for phase in ["triggerExecution"] + [p for p in phases if p != "triggerExecution"]:
            values = [d.get(phase, 0) for d in one_row]
            print(f"  {phase:<20} p50 {statistics.median(values):7.0f} ms   "
                  f"p95 {_pct(values, 0.95):7.0f} ms")
    return 0


def _in_batch_s(query) -> float:
    return sum(p["durationMs"].get("triggerExecution", 0) for p in query.recentProgress
               if p["numInputRows"] > 0) / 1000


def _best(runs) -> tuple[float, float]:
    """The run with the best wall time: (wall seconds, in-batch seconds)."""
    return min(runs)


def _own_per_batch_ms(path: str) -> dict[str, float]:
    """latestOffset, partitions and read of one new row, timed without Spark."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from spark_queue.connector.partition_reader import read_partition
    from spark_queue.connector.source_options import parse_source_options
    from spark_queue.connector.source_schema import default_schema
    from spark_queue.connector.stream_reader import SqliteQueueStreamReader
    from spark_queue.store import Store

    opts = parse_source_options({"path": path, "topic": "own"}, streaming=True)
    reader = SqliteQueueStreamReader(opts, default_schema(opts))
    timings: dict[str, list[float]] = {"latestOffset": [], "partitions": [], "read": []}
    with Store(path) as store:
        for _ in range(50):
            start = {"own": store.publish("own", "x" * 100)}
            t0 = time.perf_counter()
            end = reader.latestOffset(start, ReadAllAvailable())
            t1 = time.perf_counter()
            parts = reader.partitions(start, end)
            t2 = time.perf_counter()
            for part in parts:
                for _batch in read_partition(opts, reader.schema, part):
                    pass
            t3 = time.perf_counter()
            timings["latestOffset"].append(t1 - t0)
            timings["partitions"].append(t2 - t1)
            timings["read"].append(t3 - t2)
    return {k: statistics.median(v) * 1000 for k, v in timings.items()}


def _latency(spark, path: str, workdir: str, args: argparse.Namespace):
    from spark_queue.store import Store

    latencies: list[float] = []
    stop = threading.Event()

    def collect(df, _batch_id) -> None:
        rows = df.select("value").collect()
        seen = time.time()
        for row in rows:
            text = bytes(row.value).decode()
            if text.startswith("t="):
                latencies.append(seen - float(text[2:]))

    with Store(path) as store:
        store.create_topic("latency")
    query = (
        spark.readStream.format("sqliteq").option("path", path).option("topic", "latency")
        .option("startingOffsets", "latest").load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", os.path.join(workdir, "ck-latency"))
        .start()
    )

    def publish() -> None:
        with Store(path) as store:
            for _ in range(args.latency_events):
                if stop.is_set():
                    return
                store.publish("latency", f"t={time.time():.6f}")
                time.sleep(args.interval_ms / 1000)

    # Wait for the first (empty) trigger: startingOffsets=latest is resolved then.
    deadline = time.monotonic() + 120
    while query.lastProgress is None and time.monotonic() < deadline:
        time.sleep(0.1)
    publisher = threading.Thread(target=publish)
    publisher.start()
    publisher.join()
    deadline = time.monotonic() + 30
    while len(latencies) < args.latency_events and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    one_row = [p["durationMs"] for p in query.recentProgress if p["numInputRows"] == 1]
    query.stop()
    return latencies, one_row
