"""Latency benchmark: publish -> rows in hand inside ``foreachBatch``, against Spark's floor.

In one run and one SparkSession (``local[N]``, Spark's defaults), every path
runs a trigger-0 query (``processingTime`` 0) into ``foreachBatch``, which
collects the batch's one row and stamps the time it has it:

- the floor: Spark's built-in ``rate`` source at 1 row/s (one partition). Its
  row stamped T becomes available at T + 1 s (the source's offset is whole
  seconds since the query started), so its latency is counted from T + 1 s;
- ``sqliteq`` with its defaults (``latencyMode=auto``: such a batch ships with
  the plan), and with ``latencyMode=throughput`` and ``low`` forced: one
  event published at a time, the next one ``--gap-ms`` after the previous
  one was seen (so each micro-batch holds one row and none waits behind the
  previous batch's commit);
- the same ``rate`` as a Python simple stream reader that yields Arrow and does
  no I/O (FileSystem manager only): what any Python source pays on the path
  ``latencyMode=low`` takes, to tell that cost from the source's own;

the first four each under Spark's default checkpoint manager (FileContext) and the
recommended ``FileSystemBasedCheckpointFileManager``. That setting is a SQL
conf read when a query starts, so it is switched per query with
``spark.conf.set`` before ``start()``; the benchmark reads the class back from
each query's offset log and fails if it is not the one asked for. Then the
first four paths with ``asyncProgressTrackingEnabled`` (at-least-once),
reported separately: Spark (4.2) allows it on the Kafka, console, memory and
noop sinks only, so ``foreachBatch`` gets it through Spark's internal
override of that check, to keep one definition of "visible".

With ``--kafka-bootstrap HOST:PORT`` (:mod:`benchmarks.kafka_broker`), Spark's
Kafka source joins every group of paths under the same settings, at Kafka's
defaults and with ``kafka.fetch.max.wait.ms=10`` (see :data:`KAFKA_SOURCES`):
a fresh one-partition topic per turn, each event sent by confluent-kafka (``acks=all``,
idempotence, ``linger.ms=0`` so no batching delay, then ``flush``: like
``Store.publish``, the send returns once the write is acknowledged), paced like
the sqliteq events; ratios sqliteq / Kafka are printed per group.

Paths take turns round-robin, ``--round-events`` events per turn, so load on
the machine hits them alike; each turn is a fresh query whose first batch
with data is a warm-up and not counted. Ratios are to the floor measured in
the same run under the same settings. Also printed: each path's one-row
micro-batch split into Spark's progress phases (``durationMs``, p50), each
path's time from ``start()`` to its first trigger (every turn starts a query),
the source's own work per one-row batch measured in process, and the bulk rate
of every read mode (``availableNow`` into ``noop``).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import threading
import time

from benchmarks import kafka_broker
from benchmarks import starts as start_bench
from benchmarks.latency_report import (
    DEFAULT,
    FLOOR,
    KAFKA_SOURCES,
    MANAGERS,
    PYTHON_FLOOR,
    READ_MODES,
    TIMED,
    Samples,
    Variant,
    print_bulk,
    print_first_triggers,
    print_kafka,
    print_latency,
    print_phases,
    print_targets,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=50,
                        help="events measured per path (default 50)")
    parser.add_argument("--round-events", type=int, default=10,
                        help="events per turn; paths take turns round-robin (default 10)")
    parser.add_argument("--gap-ms", type=int, default=300,
                        help="sqliteq: publish the next event this long after the previous one "
                             "was seen, so each micro-batch holds one row (default 300)")
    parser.add_argument("--bulk-events", type=int, default=200_000,
                        help="events of 100 bytes for the bulk rate of both modes (default "
                             "200000; 0 skips it)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="bulk: best of N, modes alternating (default 2)")
    parser.add_argument("--no-async", action="store_true",
                        help="skip the async progress tracking paths")
    parser.add_argument("--cores", type=int, default=2, help="local[N] for Spark (default 2)")
    kafka_broker.add_argument(parser)
    start_bench.add_argument(parser)


def run(args: argparse.Namespace) -> int:
    return kafka_broker.run_with_broker(args, "sq-bench-latency-", _run)


def variants(with_async: bool, with_kafka: bool = False) -> list[Variant]:
    """Every measured path, in the order each round runs them."""
    sources = (FLOOR, *READ_MODES, *(KAFKA_SOURCES if with_kafka else ()))
    found = [Variant(source, manager) for manager in MANAGERS for source in sources]
    found.append(Variant(PYTHON_FLOOR, "filesystem"))
    if with_async:
        found += [Variant(source, "filesystem", True) for source in sources]
    return found


def _run(args: argparse.Namespace, workdir: str, kafka: kafka_broker.Kafka | None) -> int:
    if args.starts_only:
        return start_bench.run_only(args, workdir)
    from benchmarks.report import local_session
    from spark_queue.store import Store

    path = os.path.join(workdir, "bench.sqlite")
    with Store(path) as store:
        store.topic("own").create()
    spark = local_session("spark_queue-bench-latency", args.cores,
                          kafka_broker.session_conf(kafka))
    spark.dataSource.register(_python_rate_source())
    paths = variants(not args.no_async, kafka is not None)
    samples = {v: Samples() for v in paths}
    rounds = math.ceil(args.events / args.round_events)
    turn = iter(range(1_000_000))
    for variant in paths:  # warm-up: the JVM's JIT, Python workers, imports
        _measure_turn(spark, variant, path, workdir, next(turn), 2, args.gap_ms, Samples(),
                      kafka)
    started = time.monotonic()
    for _ in range(rounds):
        for variant in paths:
            _measure_turn(spark, variant, path, workdir, next(turn), args.round_events,
                          args.gap_ms, samples[variant], kafka)
    latency_s = time.monotonic() - started
    bulk = _bulk(spark, path, workdir, args) if args.bulk_events else {}
    # Printed at once: the alternating starts are a table of their own.
    start_bench.measure_and_print(spark, workdir, args.start_rounds)
    spark.stop()
    own_ms = _own_work_ms(path)

    print(f"\nlatency: publish -> rows in hand in foreachBatch; trigger processingTime 0, "
          f"local[{args.cores}], one SparkSession; {args.round_events} events per turn, "
          f"{rounds} rounds, paths round-robin ({latency_s:.0f} s)")
    print("rate: 1 row/s in one partition, counted from T + 1 s (when a row stamped T becomes "
          f"available); sqliteq: each event published {args.gap_ms} ms after the previous "
          "one was seen")
    print_latency(samples, [v for v in paths if not v.async_progress],
                   "Exactly-once progress tracking (Spark's default)")
    if not args.no_async:
        print_latency(samples, [v for v in paths if v.async_progress],
                       "asyncProgressTrackingEnabled=true (at-least-once), FileSystem manager; "
                       "foreachBatch through Spark's internal sink-check override")
    print_targets(samples)
    if kafka:
        print_kafka(samples, kafka)
    print_phases(samples, paths)
    print_first_triggers(samples, paths)
    print("\nThe source's own work per one-row micro-batch, in process without Spark "
          "(ms, p50 of 50): " + ", ".join(f"{k} {v:.2f}" for k, v in own_ms.items()))
    if bulk:
        print_bulk(bulk, args)
    return 0


# -- one turn ------------------------------------------------------------------


def _measure_turn(spark, variant: Variant, path: str, workdir: str, turn: int, events: int,
                  gap_ms: int, into: Samples, kafka: kafka_broker.Kafka | None = None) -> None:
    """Run a fresh query of ``variant`` until ``events`` events after its warm-up batch
    were seen; add what it measured to ``into``."""
    from benchmarks.report import first_trigger_s
    from spark_queue.connector import compat
    from spark_queue.store import Store

    seen: list[tuple[int, list[float]]] = []  # (batch id, latencies of its rows)
    arrived = threading.Condition()

    def collect(df, batch_id: int) -> None:
        if variant.source in TIMED:
            rows = df.selectExpr("CAST(timestamp AS DOUBLE) AS t").collect()
            now = time.time()
            latencies = [now - (row.t + 1.0) for row in rows]
        else:
            rows = df.select("value").collect()
            now = time.time()
            latencies = [now - float(bytes(row.value).decode()[2:]) for row in rows]
        if not latencies:  # a new query's batch 0 can be empty (start = end)
            return
        with arrived:
            seen.append((batch_id, latencies))
            arrived.notify_all()

    def events_seen() -> int:
        return sum(len(lat) for _, lat in seen)

    def wait_for(count: int, timeout_s: float) -> None:
        with arrived:
            if not arrived.wait_for(lambda: events_seen() >= count, timeout_s):
                raise RuntimeError(f"latency benchmark: {variant.label} saw {events_seen()} "
                                   f"of {count} events within {timeout_s:.0f} s")

    topic = f"latency{turn}"
    if variant.source == FLOOR:
        reader = (spark.readStream.format("rate").option("rowsPerSecond", 1)
                  .option("numPartitions", 1))
    elif variant.source == PYTHON_FLOOR:
        reader = spark.readStream.format(PYTHON_FLOOR)
    elif variant.source in KAFKA_SOURCES:
        assert kafka is not None  # Kafka variants exist only with a broker
        topic = kafka.new_topic("latency")
        reader = spark.readStream.format("kafka").options(
            **kafka.source_options(topic), **KAFKA_SOURCES[variant.source])
    else:
        with Store(path) as store:
            store.topic(topic).create()
        reader = (spark.readStream.format("sqliteq").option("path", path)
                  .option("topic", topic))
        if variant.source != DEFAULT:  # the default path sets no option at all
            reader = reader.option("latencyMode", variant.source)
    writer = (reader.load().writeStream.foreachBatch(collect)
              .option("checkpointLocation", os.path.join(workdir, f"ck{turn}"))
              .trigger(processingTime="0 seconds"))
    if variant.async_progress:
        # Spark (4.2) allows async progress tracking only on the Kafka, console,
        # memory and noop sinks; its internal override lets foreachBatch time it
        # with the same definition of "visible" as every other path here.
        writer = (writer.option("asyncProgressTrackingEnabled", "true")
                  .option("_asyncProgressTrackingOverrideSinkSupportCheck", "true"))
    # A SQL conf read when the query starts (its checkpoint logs open their file
    # manager then): set per query, checked below from the query's offset log.
    if variant.manager == "filesystem":
        spark.conf.set(compat.CHECKPOINT_MANAGER_CONF, compat.FILE_SYSTEM_CHECKPOINT_MANAGER)
    else:
        spark.conf.unset(compat.CHECKPOINT_MANAGER_CONF)
    started_s = time.time()
    query = writer.start()
    try:
        if variant.source in TIMED:
            # The first batch with rows is the warm-up; then one row a second.
            with arrived:
                arrived.wait_for(lambda: len(seen) >= 1, 120)
            first = events_seen()
            wait_for(first + events, events + 60)
        elif variant.source in KAFKA_SOURCES:
            assert kafka is not None
            # No batching delay: each send goes out at once, flush() waits for its ack.
            producer = kafka.producer(**{"linger.ms": 0})
            producer.list_topics(topic, timeout=10)
            for count in range(1, events + 2):  # the first: warm-up
                producer.produce(topic, f"t={time.time():.6f}".encode())
                producer.flush(30)
                wait_for(count, 60)
                time.sleep(gap_ms / 1000)
        else:
            with Store(path) as store:
                for count in range(1, events + 2):  # the first: warm-up
                    store.publish(topic, f"t={time.time():.6f}")
                    wait_for(count, 60)
                    time.sleep(gap_ms / 1000)
        _check_manager(query, variant, compat.FILE_SYSTEM_CHECKPOINT_MANAGER)
        progress = query.recentProgress
    finally:
        query.stop()
    with arrived:
        batches = sorted(seen)[1:]  # without the warm-up batch
    first_batch = min((b for b, _ in seen), default=-1)
    into.latencies_s.extend([x for _, lat in batches for x in lat][:events])
    into.batches += len(batches)
    into.multi_row_batches += sum(1 for _, lat in batches if len(lat) > 1)
    into.phases_ms.extend(p["durationMs"] for p in progress
                          if p["numInputRows"] == 1 and p["batchId"] > first_batch)
    into.first_trigger_s.append(first_trigger_s(started_s, progress))


def _check_manager(query, variant: Variant, file_system_class: str) -> None:
    """Fail unless the query's offset log writes through the manager ``variant`` asks for."""
    # Internal accessors (StreamExecution.offsetLog, HDFSMetadataLog.fileManager):
    # the one place that names the class a running query really uses.
    used = query._jsq.streamingQuery().offsetLog().fileManager().getClass().getName()
    wants_file_system = variant.manager == "filesystem"
    if (used == file_system_class) != wants_file_system:
        raise RuntimeError(f"latency benchmark: {variant.label} ({variant.manager} checkpoint "
                           f"manager) ran with {used}")


def _python_rate_source():
    """``rate`` at 1 row/s (offsets in whole seconds since the reader started, a row
    stamped T available at T + 1 s) as a Python simple stream reader that yields Arrow and
    does no I/O: the floor of a Python source on the path ``latencyMode=low`` takes."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader

    def rows(created_s: float, first: int, end: int) -> list[pa.RecordBatch]:
        seconds = range(first, end)
        return [pa.RecordBatch.from_arrays(
            [pa.array(seconds, pa.int64()),
             pa.array([created_s + k for k in seconds], pa.float64())],
            names=["value", "timestamp"])]

    class PythonRateReader(SimpleDataSourceStreamReader):
        def __init__(self) -> None:
            self.created_s = time.time()

        def initialOffset(self) -> dict:
            return {"second": 0}

        def read(self, start: dict):
            end = int(time.time() - self.created_s)
            if end <= start["second"]:
                return iter(()), start
            return iter(rows(self.created_s, start["second"], end)), {"second": end}

        def readBetweenOffsets(self, start: dict, end: dict):
            return iter(rows(self.created_s, start["second"], end["second"]))

    class PythonRateSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return PYTHON_FLOOR

        def schema(self) -> str:
            return "value LONG, timestamp DOUBLE"

        def simpleStreamReader(self, schema):
            return PythonRateReader()

    return PythonRateSource


# -- bulk rate of both modes ----------------------------------------------------


def _bulk(spark, path: str, workdir: str, args: argparse.Namespace) -> dict[str, tuple]:
    """Best (wall rows/s, in-batch rows/s) per read mode: availableNow into noop."""
    from benchmarks.report import in_batch_seconds
    from spark_queue.connector import compat
    from spark_queue.store import Store

    n = args.bulk_events
    with Store(path) as store:
        store.publish_many("bulk", (f"{i:010d}-{'x' * 89}" for i in range(n)))
    spark.conf.set(compat.CHECKPOINT_MANAGER_CONF, compat.FILE_SYSTEM_CHECKPOINT_MANAGER)
    counter = iter(range(1_000_000))

    def once(mode: str) -> tuple[float, float]:
        reader = spark.readStream.format("sqliteq").option("path", path).option("topic", "bulk")
        if mode != DEFAULT:
            reader = reader.option("latencyMode", mode)
        query = (reader.load()
                 .writeStream.format("noop").trigger(availableNow=True)
                 .option("checkpointLocation", os.path.join(workdir, f"bulk{next(counter)}")))
        started = time.perf_counter()
        q = query.start()
        q.awaitTermination()
        wall_s = time.perf_counter() - started
        rows = sum(p["numInputRows"] for p in q.recentProgress)
        if rows != n:
            raise RuntimeError(f"latency benchmark: latencyMode={mode} read {rows} of {n} rows")
        return n / wall_s, n / in_batch_seconds(q.recentProgress)

    for mode in READ_MODES:  # warm-up
        once(mode)
    best: dict[str, tuple] = {mode: (0.0, 0.0) for mode in READ_MODES}
    for _ in range(args.repeats):
        for mode in READ_MODES:
            wall, in_batch = once(mode)
            best[mode] = (max(best[mode][0], wall), max(best[mode][1], in_batch))
    return best


# -- the source's own work, without Spark -----------------------------------------


def _own_work_ms(path: str) -> dict[str, float]:
    """Every reader's driver-side calls for one new row, and the executor path's task read."""
    from spark_queue.connector.source.auto_reader import SqliteQueueAutoStreamReader
    from spark_queue.connector.source.partition_reader import read_partition
    from spark_queue.connector.source.simple_reader import SqliteQueueSimpleStreamReader
    from spark_queue.connector.source.source_options import parse_source_options
    from spark_queue.connector.source.source_schema import default_schema
    from spark_queue.connector.source.stream_reader import SqliteQueueStreamReader
    from spark_queue.store import Store

    opts = parse_source_options({"path": path, "topic": "own"}, streaming=True)
    schema = default_schema(opts)
    reader = SqliteQueueStreamReader(opts, schema)
    auto = SqliteQueueAutoStreamReader(opts, schema)
    simple = SqliteQueueSimpleStreamReader(opts, schema)
    names = ("latestOffset", "throughput partitions", "throughput read (task)",
             "auto partitions + getCache (plan + rows)", "low read (plan + rows)")
    timings: dict[str, list[float]] = {name: [] for name in names}
    with Store(path) as store:
        for _ in range(50):
            start = {"own": store.publish("own", "x" * 100)}
            t0 = time.perf_counter()
            end = reader.latestOffset(start)
            t1 = time.perf_counter()
            parts = reader.partitions(start, end)
            t2 = time.perf_counter()
            rows = sum(b.num_rows for part in parts for b in read_partition(opts, schema, part))
            t3 = time.perf_counter()
            auto.partitions(start, end)
            rows_auto = sum(b.num_rows for b in auto.getCache(start, end) or ())
            t4 = time.perf_counter()
            batches, _ = simple.read(start)
            rows_low = sum(b.num_rows for b in batches)
            t5 = time.perf_counter()
            assert rows == rows_auto == rows_low == 1, (rows, rows_auto, rows_low)
            for name, elapsed in zip(names, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4),
                                     strict=True):
                timings[name].append(elapsed)
    return {name: statistics.median(v) * 1000 for name, v in timings.items()}
