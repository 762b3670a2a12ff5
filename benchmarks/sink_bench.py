"""Sink benchmark: rows of ~100 bytes into a topic from Spark, against raw apsw ``executemany``.

Paths, all in one run on the same rows, each into a fresh store file:

- raw: one ``INSERT ... SELECT ... FROM carray(?)`` per 10,000 rows in one
  transaction (SQLite's limit: no encoding, no Spark, nothing per row in
  Python), and pre-built row tuples into ``executemany`` (a row-by-row insert).
- Spark batch write: ``spark.read.parquet(...).write.format("sqliteq")``.
- Spark streaming write: the same rows as ONE micro-batch
  (``readStream.parquet`` + ``Trigger.AvailableNow``), checkpoint included.

With ``--kafka-bootstrap HOST:PORT`` (:mod:`benchmarks.kafka_broker`), in the
same session and rounds: Kafka's batch sink (``df.write.format("kafka")``) and
streaming sink (the same ``readStream.parquet`` micro-batch into
``format("kafka")``) beside ours, the sink alone compared on the same input;
and a same-format streaming copy of the same rows (a sqliteq topic into a new
store through ``format("sqliteq")``, a Kafka topic into another Kafka topic),
each source and sink at its defaults, the pipeline a user of either runs.
Kafka's sink gets the producer settings of the other Kafka rows (``acks=all``,
idempotence, ``linger.ms=5``) and is checked to hold exactly the rows written.

All paths run in interleaved rounds (best round each), so load on a shared
machine hits them alike. Where the time goes is reported from the same rows:
Spark's own cost (the same DataFrame into the ``noop`` sink), the executor
side of the sink (encoding into Arrow IPC), moving the commit messages to the
driver (pickling), and the driver commit (decode + insert + COMMIT) run
in-process.
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import tempfile
import time
from collections.abc import Callable

import apsw

from benchmarks import kafka_broker
from benchmarks.report import now_ms, print_table
from benchmarks.sink_rows import bench_values, check_written
from spark_queue.store import TEXT, Store

_INSERT = (
    "INSERT INTO sq_events (topic_id, offset, ts_ms, key, value, value_type, headers) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="rounds; best round per path")
    parser.add_argument("--partitions", type=int, default=2, help="Spark partitions of the input")
    parser.add_argument("--durability", choices=("full", "normal", "off"), default="normal",
                        help="the sink's durability option (full: an fsync per commit)")
    parser.add_argument("--section", choices=("all", "durability"), default="all",
                        help="durability: the sink at durability full against normal, in one "
                        "micro-batch of --rows rows and in micro-batches of --batch-rows "
                        "(benchmarks/sink_durability.py)")
    parser.add_argument("--small-rows", type=int, default=20_000,
                        help="durability section: rows written in small micro-batches")
    parser.add_argument("--batch-rows", type=int, default=1_000,
                        help="durability section: rows per small micro-batch")
    kafka_broker.add_argument(parser)


def run(args: argparse.Namespace) -> int:
    if args.section == "durability":
        from benchmarks import sink_durability

        workdir = tempfile.mkdtemp(prefix="sq-bench-sink-durability-")
        try:
            return sink_durability.run(args, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return kafka_broker.run_with_broker(args, "sq-bench-sink-", _run)


def _run(args: argparse.Namespace, workdir: str, kafka: kafka_broker.Kafka | None) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n, size = args.rows, args.value_bytes
    values = bench_values(n, size)
    counter = iter(range(1_000_000))

    def fresh_path() -> str:
        return os.path.join(workdir, f"s{next(counter)}.sqlite")

    # -- raw apsw ----------------------------------------------------------
    def raw(_: int) -> float:
        with Store(fresh_path()) as store:
            store.topic("bench").create()
            ts = now_ms()
            rows = [(1, i, ts, None, v, TEXT, None) for i, v in enumerate(values)]
            started = time.perf_counter()
            with store.write() as conn:
                conn.executemany(_INSERT, rows)
            return time.perf_counter() - started

    def raw_packed(_: int) -> float:
        # SQLite's own limit: one INSERT ... SELECT per 10,000 rows over the
        # values bound as one array (nothing per row in Python).
        with Store(fresh_path()) as store:
            store.topic("bench").create()
            ts = now_ms()
            started = time.perf_counter()
            with store.write() as conn:
                for start in range(0, n, 10_000):
                    conn.execute(
                        "INSERT INTO sq_events (topic_id, offset, ts_ms, key, value, value_type,"
                        " headers) SELECT 1, ?1 + rowid - 1, ?2, NULL, value, ?3, NULL "
                        "FROM carray(?4)",
                        (start, ts, TEXT, apsw.carray(tuple(values[start : start + 10_000]))),
                    )
            return time.perf_counter() - started

    # -- the sink's phases, in-process ----------------------------------------
    from spark_queue.connector.sink.sink_options import SinkOptions
    from spark_queue.connector.sink.sink_schema import TEXT as VALUE_TEXT
    from spark_queue.connector.sink.sink_schema import SinkLayout
    from spark_queue.connector.sink.writers import SqliteQueueBatchWriter

    table = pa.table({"value": pa.array(values, pa.string())})
    arrow_batches = table.to_batches(max_chunksize=10_000)
    layout = SinkLayout(target="topic", value_type=VALUE_TEXT, value_column="value")

    def phases(_: int) -> tuple[float, float, float]:
        # A new store each round, as the Spark paths' createStore option asks for.
        writer = SqliteQueueBatchWriter(
            SinkOptions(path=fresh_path(), topic="bench", create_store=True), layout)
        started = time.perf_counter()
        message = writer._pack(iter(arrow_batches))
        packed = time.perf_counter()
        message = pickle.loads(pickle.dumps(message))
        moved = time.perf_counter()
        writer._commit([message], None, None)
        done = time.perf_counter()
        return packed - started, moved - packed, done - moved

    # -- Spark ----------------------------------------------------------------
    import spark_queue
    from spark_queue.spark.session import ensure_python_workers

    ensure_python_workers()
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{max(args.partitions, 2)}]")
        .appName("spark_queue-bench-sink")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "3g")
        .config("spark.sql.shuffle.partitions", str(args.partitions))
        .config(map=kafka_broker.session_conf(kafka))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark_queue.register(spark)
    input_dir = os.path.join(workdir, "input")
    os.makedirs(input_dir)
    per_file = -(-n // args.partitions)
    for i in range(args.partitions):
        pq.write_table(
            table.slice(i * per_file, per_file), os.path.join(input_dir, f"p{i}.parquet")
        )
    schema = spark.read.parquet(input_dir).schema

    def noop(_: int) -> float:
        started = time.perf_counter()
        spark.read.parquet(input_dir).write.format("noop").mode("overwrite").save()
        return time.perf_counter() - started

    def batch(_: int) -> float:
        path = fresh_path()
        started = time.perf_counter()
        spark.read.parquet(input_dir).write.format("sqliteq").mode("append").option(
            "topic", "bench"
        ).option("createStore", "true").option("durability", args.durability).save(path)
        elapsed = time.perf_counter() - started
        check_written(path, n)
        return elapsed

    stream_phases: list[dict[str, int]] = []

    def streaming(i: int) -> float:
        path = fresh_path()
        started = time.perf_counter()
        query = (
            spark.readStream.schema(schema)
            .parquet(input_dir)
            .writeStream.format("sqliteq")
            .option("path", path)
            .option("createStore", "true")
            .option("topic", "bench")
            .option("durability", args.durability)
            .option("checkpointLocation", os.path.join(workdir, f"ck{i}-{next(counter)}"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        elapsed = time.perf_counter() - started
        check_written(path, n)
        progress = [p for p in query.recentProgress if p.numInputRows]
        if progress:
            stream_phases.append(progress[-1].durationMs)
        return elapsed

    kafka_paths = _kafka_paths(spark, kafka, input_dir, schema, values, workdir) if kafka else {}

    # Rounds interleave every path, so a load change on a shared machine hits
    # all of them alike; each path reports its best round.
    rounds = []
    kafka_best = dict.fromkeys(kafka_paths, float("inf"))
    for i in range(args.repeats):
        rounds.append((raw(i), raw_packed(i), *phases(i), noop(i), batch(i), streaming(i)))
        for label, path_run in kafka_paths.items():
            kafka_best[label] = min(kafka_best[label], path_run())
    raw_s, limit_s, pack_s, move_s, commit_s, noop_s, batch_s, stream_s = (
        min(r[k] for r in rounds) for k in range(8)
    )
    spark.stop()

    base = "raw one INSERT ... FROM carray per 10,000"
    print_table(
        f"sink: {n:,} rows of {size} bytes into one topic, durability {args.durability} "
        f"(best of {args.repeats})",
        [
            (base, n / limit_s, base),
            ("raw apsw executemany (pre-built tuples)", n / raw_s, base),
            ("sink commit only (decode+insert+COMMIT)", n / commit_s, base),
            ("Spark batch write format('sqliteq')", n / batch_s, base),
            ("Spark streaming write (one micro-batch)", n / stream_s, base),
        ],
    )
    if kafka is not None and kafka_best:
        _print_kafka(kafka, n, size, args.repeats, batch_s, stream_s, kafka_best)
    print("\nwhere the time goes (seconds):")
    for label, seconds in [
        ("raw apsw executemany + COMMIT", raw_s),
        ("raw one INSERT per 10,000 + COMMIT (the limit)", limit_s),
        ("Spark read parquet -> noop sink (Spark's own cost)", noop_s),
        ("executor: encode + Arrow IPC (one task, in-process)", pack_s),
        ("commit message pickle round trip", move_s),
        ("driver commit: decode + insert + COMMIT (in-process)", commit_s),
        ("Spark batch write, end to end", batch_s),
        ("Spark streaming write, end to end (incl. checkpoint)", stream_s),
    ]:
        print(f"  {label:<56} {seconds:8.2f}")
    if stream_phases:
        best = min(stream_phases, key=lambda d: d.get("triggerExecution", 0))
        print("\nstreaming micro-batch phases (ms, Spark's durationMs of the fastest run):")
        print("  " + ", ".join(f"{k}={v}" for k, v in sorted(best.items())))
        print(
            "  addBatch = tasks (read, encode, pack) + the driver's sink commit; "
            "walCommit + commitOffsets = checkpoint writes"
        )
    return 0


KAFKA_BATCH = "Kafka batch write format('kafka')"
KAFKA_STREAM = "Kafka streaming write (one micro-batch)"
KAFKA_COPY = "Kafka -> Kafka streaming copy"
SQLITEQ_COPY = "sqliteq -> sqliteq streaming copy"


def _kafka_paths(spark, kafka: kafka_broker.Kafka, input_dir: str, schema, values: list[str],
                 workdir: str) -> dict[str, Callable[[], float]]:
    """Kafka's sink paths and the two same-format copies: label -> a run returning seconds.
    The copies' sources (a store file and a Kafka topic of the same rows) are filled here,
    outside the clock."""
    n = len(values)
    counter = iter(range(1_000_000))
    source_store = os.path.join(workdir, "copy-source.sqlite")
    with Store(source_store) as store:
        store.publish_many("bench", values)
    source_topic = kafka.new_topic("copy-source")
    kafka.produce(source_topic, [v.encode() for v in values])

    def timed_query(query) -> float:
        started = time.perf_counter()
        query.start().awaitTermination()
        return time.perf_counter() - started

    def checkpoint() -> str:
        return os.path.join(workdir, f"kafka-ck{next(counter)}")

    def kafka_batch() -> float:
        topic = kafka.new_topic("batch")
        started = time.perf_counter()
        spark.read.parquet(input_dir).write.format("kafka").options(
            **kafka.sink_options(topic)).save()
        elapsed = time.perf_counter() - started
        kafka.check_count(topic, n)
        return elapsed

    def kafka_stream() -> float:
        topic = kafka.new_topic("stream")
        elapsed = timed_query(
            spark.readStream.schema(schema).parquet(input_dir).writeStream.format("kafka")
            .options(**kafka.sink_options(topic)).option("checkpointLocation", checkpoint())
            .trigger(availableNow=True))
        kafka.check_count(topic, n)
        return elapsed

    def kafka_copy() -> float:
        topic = kafka.new_topic("copy")
        elapsed = timed_query(
            spark.readStream.format("kafka").options(**kafka.source_options(source_topic)).load()
            .select("value").writeStream.format("kafka").options(**kafka.sink_options(topic))
            .option("checkpointLocation", checkpoint()).trigger(availableNow=True))
        kafka.check_count(topic, n)
        return elapsed

    def sqliteq_copy() -> float:
        path = os.path.join(workdir, f"copy{next(counter)}.sqlite")
        elapsed = timed_query(
            spark.readStream.format("sqliteq").option("path", source_store)
            .option("topic", "bench").load().select("value")
            .writeStream.format("sqliteq").option("path", path).option("topic", "bench")
            .option("createStore", "true")
            .option("checkpointLocation", checkpoint()).trigger(availableNow=True))
        check_written(path, n)
        return elapsed

    return {KAFKA_BATCH: kafka_batch, KAFKA_STREAM: kafka_stream, KAFKA_COPY: kafka_copy,
            SQLITEQ_COPY: sqliteq_copy}


def _print_kafka(kafka: kafka_broker.Kafka, n: int, size: int, repeats: int, batch_s: float,
                 stream_s: float, best: dict[str, float]) -> None:
    print(f"\n{kafka.describe()}")
    print_table(
        f"sink vs Kafka: the same {n:,} rows of {size} bytes, same session, best of {repeats} "
        "(wall clock, query start included)",
        [
            (KAFKA_BATCH, n / best[KAFKA_BATCH], KAFKA_BATCH),
            ("Spark batch write format('sqliteq')", n / batch_s, KAFKA_BATCH),
            (KAFKA_STREAM, n / best[KAFKA_STREAM], KAFKA_STREAM),
            ("Spark streaming write format('sqliteq')", n / stream_s, KAFKA_STREAM),
            (KAFKA_COPY, n / best[KAFKA_COPY], KAFKA_COPY),
            (SQLITEQ_COPY, n / best[SQLITEQ_COPY], KAFKA_COPY),
        ],
    )
