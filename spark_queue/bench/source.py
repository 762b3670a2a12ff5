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

Every streaming run also reports the time from ``start()`` to its first
trigger (the first progress event's trigger timestamp): the query's stand-up.

With ``--kafka-bootstrap HOST:PORT`` (:mod:`spark_queue.bench.kafka`), the same
events (values only) in a one-partition Kafka topic (one ordered log, like a
sqliteq topic), read by Spark's Kafka source in the same session: an
``availableNow`` stream into ``noop`` and a batch read, both split into as
many tasks as the sqliteq rows (``minPartitions``), and the batch read at
Kafka's default split (one task per topic partition).

Latency (publish -> rows in ``foreachBatch``) is ``python -m spark_queue.bench
latency`` (:mod:`spark_queue.bench.latency`).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import tempfile
import time

from spark_queue.bench import kafka as kafka_bench


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
    kafka_bench.add_argument(parser)


def run(args: argparse.Namespace) -> int:
    workdir = tempfile.mkdtemp(prefix="sq-bench-source-")
    kafka = kafka_bench.connect(args.kafka_bootstrap)
    try:
        return _run(args, workdir, kafka)
    finally:
        if kafka:
            kafka.close()
        shutil.rmtree(workdir, ignore_errors=True)


def _timed(body) -> float:
    started = time.perf_counter()
    body()
    return time.perf_counter() - started


def _first_trigger_s(started_epoch_s: float, progress: list[dict]) -> float:
    """Seconds from ``start()`` (epoch seconds) to the first trigger's start, as Spark
    stamps it in the first progress event."""
    stamp = datetime.datetime.fromisoformat(progress[0]["timestamp"].replace("Z", "+00:00"))
    return stamp.timestamp() - started_epoch_s


def _run(args: argparse.Namespace, workdir: str, kafka: kafka_bench.Kafka | None) -> int:
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
    spark = local_session("spark_queue-bench-source", args.cores, kafka_bench.session_conf(kafka))
    counter = iter(range(1_000_000))
    tasks = 2 * args.cores
    # start() -> first trigger of every streaming run, by source
    starts: dict[str, list[float]] = {}

    def timed_stream(label: str, query) -> tuple[float, float]:
        """(wall seconds, in-batch seconds) of one run; its stand-up into ``starts``."""
        started_epoch = time.time()
        started = time.perf_counter()
        q = query.start()
        q.awaitTermination()
        elapsed = time.perf_counter() - started
        rows = sum(p["numInputRows"] for p in q.recentProgress)
        assert rows == n, f"{label} read {rows} rows, expected {n}"
        starts.setdefault(label, []).append(_first_trigger_s(started_epoch, q.recentProgress))
        return elapsed, in_batch_seconds(q.recentProgress)

    def sqliteq_stream(read_path: str) -> tuple[float, float]:
        checkpoint = os.path.join(workdir, f"ck{next(counter)}")
        query = (
            spark.readStream.format("sqliteq").option("path", path).option("topic", "bench")
            .option("readPath", read_path).option("rowsPerPartition", -(-n // tasks))
            .load().writeStream.format("noop").option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
        )
        return timed_stream(f"sqliteq (readPath={read_path})", query)

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
    starts.clear()
    executor_s, executor_batch_s = _best(sqliteq_stream("executor") for _ in range(args.repeats))
    driver_s, driver_batch_s = _best(sqliteq_stream("driver") for _ in range(args.repeats))
    rate_s, rate_batch_s = _best(rate_stream() for _ in range(args.repeats))
    batch_s = min(sqliteq_batch() for _ in range(args.repeats))
    ceiling_s = min(ceiling_batch() for _ in range(args.repeats))
    if kafka:
        kafka_s, kafka_batch_s = _best(kafka_stream() for _ in range(args.repeats))
        kafka_read_s = min(kafka_batch(True) for _ in range(args.repeats))
        kafka_default_s = min(kafka_batch(False) for _ in range(args.repeats))
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
                ("Kafka batch read, default split (1 task)", n / kafka_default_s, batch),
            ],
        )
    _print_starts(starts)
    return 0


def _print_starts(starts: dict[str, list[float]]) -> None:
    """Each source's start() -> first trigger, against the rate source's."""
    rate = min(starts.get("rate-micro-batch", [0.0]))
    print("\nstart() -> first trigger (s; best, then every timed run; vs rate = best minus "
          "rate-micro-batch's best)")
    for label, seconds in starts.items():
        runs = ", ".join(f"{s:.2f}" for s in seconds)
        print(f"  {label:<30} {min(seconds):6.2f}  vs rate {min(seconds) - rate:+6.2f}  ({runs})")


def _best(runs) -> tuple[float, float]:
    """The run with the best wall time: (wall seconds, in-batch seconds)."""
    return min(runs)
