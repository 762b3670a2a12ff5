"""The sink at ``durability="full"`` against ``normal`` (``python -m benchmarks sink --section
durability``): what surviving a power cut costs a Spark query writing into a store.

``full`` fsyncs the WAL at every commit, and the sink commits once per micro-batch, so the
price depends on how many rows a batch carries. Two shapes, each at both levels, in
interleaved rounds (best round each), each into a fresh store file with a new checkpoint:

- one micro-batch of ``--rows`` rows (parquet files into the sink, ``availableNow``): a
  backlog drained at once, one fsync in all;
- micro-batches of ``--batch-rows`` rows (a ``sqliteq`` topic of ``--small-rows`` rows
  copied into another store with ``maxRowsPerTrigger``, drained by ``run_available_now``):
  an edge box's steady stream, one fsync per batch.

Rates are wall clock, the query's start included (after one warm-up run of each shape);
the ratio is full / normal.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from benchmarks import results
from benchmarks.report import local_session, print_table
from benchmarks.sink_rows import bench_values, check_written
from spark_queue.store import Store

LEVELS = ("normal", "full")


def run(args: argparse.Namespace, workdir: str) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    import spark_queue
    from spark_queue.spark import run_available_now

    n, small, per_batch = args.rows, args.small_rows, args.batch_rows
    spark = local_session("spark_queue-bench-sink-durability", max(args.partitions, 2))
    spark_queue.register(spark)
    counter = iter(range(1_000_000))
    values = bench_values(max(n, small), args.value_bytes)
    input_dir = os.path.join(workdir, "input")
    os.makedirs(input_dir)
    per_file = -(-n // args.partitions)
    table = pa.table({"value": pa.array(values[:n], pa.string())})
    for i in range(args.partitions):
        pq.write_table(table.slice(i * per_file, per_file),
                       os.path.join(input_dir, f"p{i}.parquet"))
    schema = spark.read.parquet(input_dir).schema
    source = os.path.join(workdir, "source.sqlite")
    with Store(source) as store:
        store.publish_many("bench", values[:small])

    add_batch_ms: dict[str, list[float]] = {level: [] for level in LEVELS}

    def into(durability: str, reader) -> tuple[str, float]:
        path = os.path.join(workdir, f"s{next(counter)}.sqlite")
        writer = (
            reader.writeStream.format("sqliteq").option("path", path).option("topic", "bench")
            .option("createStore", "true").option("durability", durability)
            .option("checkpointLocation", os.path.join(workdir, f"ck{next(counter)}"))
        )
        started = time.perf_counter()
        done = run_available_now(writer)
        elapsed = time.perf_counter() - started
        # Spark's addBatch: the tasks and the sink's commit, without the query's start.
        batch_ms = [p.durationMs["addBatch"] for p in done.query.recentProgress
                    if p.numInputRows and "addBatch" in p.durationMs]
        if len(batch_ms) > 1:
            add_batch_ms[durability].append(statistics.median(batch_ms))
        return path, elapsed

    def one_batch(durability: str) -> float:
        path, elapsed = into(durability, spark.readStream.schema(schema).parquet(input_dir))
        check_written(path, n)
        return elapsed

    def small_batches(durability: str) -> float:
        reader = (spark.readStream.format("sqliteq").option("path", source)
                  .option("topic", "bench").option("maxRowsPerTrigger", per_batch).load()
                  .select("value"))
        path, elapsed = into(durability, reader)
        check_written(path, small)
        return elapsed

    one_batch("normal")  # warm-up, not counted: the JVM's first queries run slower
    small_batches("normal")
    add_batch_ms["normal"].clear()
    rounds: dict[tuple[str, str], list[float]] = {
        (shape, level): [] for shape in ("one", "small") for level in LEVELS}
    for round_number in range(args.repeats):
        # Each round alternates which level goes first, so a warming JVM favours neither.
        for level in LEVELS if round_number % 2 == 0 else LEVELS[::-1]:
            rounds["one", level].append(one_batch(level))
            rounds["small", level].append(small_batches(level))
    spark.stop()
    best = {key: min(seconds) for key, seconds in rounds.items()}

    one = f"one micro-batch of {n:,} rows"
    many = f"micro-batches of {per_batch:,} rows ({small:,} rows)"
    print_table(
        f"sink: durability full against normal, {args.value_bytes}-byte rows, streaming "
        f"availableNow, best of {args.repeats}",
        [
            (f"{one}, normal", n / best["one", "normal"], f"{one}, normal"),
            (f"{one}, full", n / best["one", "full"], f"{one}, normal"),
            (f"{many}, normal", small / best["small", "normal"], f"{many}, normal"),
            (f"{many}, full", small / best["small", "full"], f"{many}, normal"),
        ],
    )
    for (shape, level), seconds in rounds.items():
        print(f"  rounds, {shape} {level}: " + ", ".join(f"{s:.2f} s" for s in seconds))
    batches = -(-small // per_batch)
    extra_ms = (best["small", "full"] - best["small", "normal"]) * 1000 / batches
    print(f"  full costs {extra_ms:+.1f} ms per micro-batch of {per_batch:,} rows "
          f"({batches} batches), wall clock")
    # The steadier figure: the median addBatch of a run's small batches, best run per level.
    normal_ms, full_ms = (min(add_batch_ms[level]) for level in LEVELS)
    print(f"  addBatch per micro-batch of {per_batch:,} rows (median of a run, best run): "
          f"normal {normal_ms:.0f} ms, full {full_ms:.0f} ms, full / normal "
          f"{full_ms / normal_ms:.2f}x")
    results.record(
        f"sink: durability full against normal, addBatch per micro-batch of {per_batch:,} rows",
        {"normal ms": normal_ms, "full ms": full_ms,
         "full / normal": round(full_ms / normal_ms, 2),
         "full - normal ms per batch, wall clock": round(extra_ms, 1)},
    )
    return 0
