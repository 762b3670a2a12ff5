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

Latency (publish -> rows in ``foreachBatch``) is ``python -m spark_queue.bench
latency`` (:mod:`spark_queue.bench.latency`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
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

            from spark_queue.connector.source.options import parse_source_options
            from spark_queue.connector.source.schema import default_schema

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
            from spark_queue.connector.source.options import parse_source_options
            from spark_queue.connector.source.schema import default_schema

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


def _run(args: argparse.Namespace, workdir: str) -> int:
    from spark_queue.bench.report import in_batch_seconds, local_session, print_table
    from spark_queue.store import Store

    n = args.events
    path = os.path.join(workdir, "bench.sqlite")
    with Store(path) as store:
        pad = "x" * (args.value_bytes - 11)
        store.publish_many("bench", (f"{i:010d}-{pad}" for i in range(n)))

    # -- without Spark ---------------------------------------------------------
    from spark_queue.connector.source.options import parse_source_options
    from spark_queue.connector.source.partition_reader import read_partition
    from spark_queue.connector.source.partitions import StoreRangePartition
    from spark_queue.connector.source.schema import default_schema

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
    spark = local_session("spark_queue-bench-source", args.cores)
    counter = iter(range(1_000_000))

    def sqliteq_stream(read_path: str) -> tuple[float, float]:
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
        return elapsed, in_batch_seconds(q.recentProgress)

    def rate_stream() -> tuple[float, float]:
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
        return elapsed, in_batch_seconds(q.recentProgress)

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
    return 0


def _best(runs) -> tuple[float, float]:
    """The run with the best wall time: (wall seconds, in-batch seconds)."""
    return min(runs)
