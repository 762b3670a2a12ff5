"""In-batch rates side by side, in alternating rounds (the last table of ``bench source``).

Each run is one ``availableNow`` micro-batch of the N events into ``noop``; every
round runs each path once, in turn, so load and the JVM's warm-up hit them alike,
and the table shows medians of ``triggerExecution`` (the batch's own time, without
the query's start):

- ``rate-micro-batch``: N rows in one micro-batch over ``cores`` partitions, with a
  100-byte binary column, a long and a timestamp;
- the ceiling: a Python streaming source that does no I/O and yields prebuilt
  Kafka-shaped Arrow batches of the same size, the most Spark's Python Data Source
  API delivers here (Spark turns a Python source's Arrow batches into rows in the
  JVM; the rate source makes rows there directly);
- ``sqliteq`` with ``readPath=executor`` and ``readPath=driver``, each at the
  default split and at ``2 x cores`` tasks.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterator
from itertools import count
from typing import Any

CEILING_FORMAT = "sqliteq_bench_ceiling_stream"
CEILING = "no-I/O Python stream (the ceiling)"
RATE = "rate-micro-batch -> noop"
#: Rounds run first and not counted: the JVM compiles the rate source's and the Arrow
#: conversion's code over the first few batches (one warm-up round left rate's time
#: falling from 360 to 185 ms across the next seven).
WARM_UP_ROUNDS = 2


def ceiling_schema() -> Any:
    """The Kafka-shaped schema of ``format("sqliteq")`` with default options, which the
    ceiling sources produce."""
    from spark_queue.connector.source.source_options import parse_source_options
    from spark_queue.connector.source.source_schema import default_schema

    return default_schema(parse_source_options({"path": "-", "topic": "t"}, streaming=True))


def ceiling_batches(rows: int, parts: int, value_bytes: int) -> Iterator[Any]:
    """One partition's share of ``rows`` as slices of one prebuilt Kafka-shaped batch."""
    import pyarrow as pa

    from spark_queue.connector.compat import arrow_schema

    target = arrow_schema(ceiling_schema())
    size = 10_000
    batch = pa.RecordBatch.from_arrays(
        [
            pa.nulls(size, pa.binary()),
            pa.array([b"x" * value_bytes] * size, pa.binary()),
            pa.array(["bench"] * size),
            pa.array([0] * size, pa.int32()),
            pa.array(range(size), pa.int64()),
            pa.array([0] * size, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            pa.array([0] * size, pa.int32()),
        ],
        schema=target,
    )
    left = rows // parts
    while left > 0:
        yield batch.slice(0, min(size, left))
        left -= size


def ceiling_stream_source() -> type:
    """The no-I/O streaming source: one micro-batch of ``rows`` rows in ``parts`` tasks."""
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

    class CeilingStreamReader(DataSourceStreamReader):
        def __init__(self, rows: int, parts: int, value_bytes: int):
            self.rows, self.parts, self.value_bytes = rows, parts, value_bytes

        def initialOffset(self) -> dict:
            return {"batch": 0}

        def latestOffset(self, start=None, limit=None) -> dict:
            return {"batch": 1}

        def partitions(self, start: dict, end: dict) -> list:
            if start["batch"] >= end["batch"]:
                return []
            return [InputPartition(i) for i in range(self.parts)]

        def read(self, partition) -> Iterator[Any]:
            return ceiling_batches(self.rows, self.parts, self.value_bytes)

        def commit(self, end: dict) -> None:
            pass

    class CeilingStreamSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return CEILING_FORMAT

        def schema(self):
            return ceiling_schema()

        def streamReader(self, schema):
            o = self.options
            return CeilingStreamReader(int(o["rows"]), int(o["parts"]), int(o["valueBytes"]))

    return CeilingStreamSource


def rate_frame(spark, n: int, cores: int, value_bytes: int):
    """``rate-micro-batch`` with N rows in one micro-batch, shaped like the events."""
    pad_sql = f"repeat('x', {value_bytes - 11})"
    return (
        spark.readStream.format("rate-micro-batch").option("rowsPerBatch", n)
        .option("numPartitions", cores).load()
        .selectExpr(
            f"CAST(concat(lpad(CAST(value AS STRING), 10, '0'), '-', {pad_sql}) AS BINARY)"
            " AS value", "value AS offset", "timestamp",
        )
    )


def measure(spark, path: str, topic: str, n: int, cores: int, value_bytes: int,
            workdir: str, rounds: int) -> dict[str, list[float]]:
    """``{path label: [in-batch seconds per round]}``, after :data:`WARM_UP_ROUNDS`."""
    from benchmarks.report import in_batch_seconds

    spark.dataSource.register(ceiling_stream_source())
    tasks = 2 * cores
    checkpoints = count()

    def sqliteq(read_path: str, split: int | None) -> Callable[[], Any]:
        def frame():
            reader = (spark.readStream.format("sqliteq").option("path", path)
                      .option("topic", topic).option("readPath", read_path))
            if split is not None:
                reader = reader.option("rowsPerPartition", -(-n // split))
            return reader.load()
        return frame

    paths: dict[str, Callable[[], Any]] = {
        RATE: lambda: rate_frame(spark, n, cores, value_bytes),
        CEILING: lambda: (spark.readStream.format(CEILING_FORMAT).option("rows", n)
                          .option("parts", cores).option("valueBytes", value_bytes).load()),
        "sqliteq, readPath=executor, default split": sqliteq("executor", None),
        "sqliteq, readPath=driver, default split": sqliteq("driver", None),
        f"sqliteq, readPath=executor, {tasks} tasks": sqliteq("executor", tasks),
        f"sqliteq, readPath=driver, {tasks} tasks": sqliteq("driver", tasks),
    }
    seconds: dict[str, list[float]] = {label: [] for label in paths}
    for round_ in range(WARM_UP_ROUNDS + rounds):
        for label, frame in paths.items():
            query = (frame().writeStream.format("noop").trigger(availableNow=True)
                     .option("checkpointLocation",
                             os.path.join(workdir, f"rounds-{next(checkpoints)}")).start())
            try:
                query.awaitTermination()
                progress = query.recentProgress
            finally:
                query.stop()
            rows = sum(p["numInputRows"] for p in progress)
            assert rows == n, f"{label} read {rows} rows, expected {n}"
            if round_ >= WARM_UP_ROUNDS:
                seconds[label].append(in_batch_seconds(progress))
    return seconds


def print_rounds(n: int, seconds: dict[str, list[float]]) -> None:
    from benchmarks.report import print_table

    rounds = len(next(iter(seconds.values())))
    medians = {label: statistics.median(runs) for label, runs in seconds.items()}
    executor = [label for label in medians if "readPath=executor" in label]
    rows = [(label, n / medians[label], RATE) for label in medians]
    rows += [(f"{label} ", n / medians[label], CEILING) for label in executor]
    rows += [(f"{label.replace('executor', 'driver')} ",
              n / medians[label.replace("executor", "driver")], label) for label in executor]
    print_table(
        f"In-batch rate, medians of {rounds} alternating rounds (rows/s = {n:,} / "
        "triggerExecution of one availableNow micro-batch into noop)", rows,
    )
    for label, runs in seconds.items():
        print(f"  {label:<42} " + ", ".join(f"{s * 1000:.0f}" for s in runs) + " ms")
