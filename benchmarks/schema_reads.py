"""``bench schema --section readers|spark-sink``: what a topic's schema costs Spark's readers
and its sink (issue 61 asks >= 0.9x for a reader of the declared columns against the same
reader given the schema, >= 0.8x for the sink with a 10-field schema against none).

``spark-sink``: ``--read-events`` rows made by Spark (``spark.range`` and SQL expressions:
the events of :mod:`benchmarks.schema_events`, every one fitting), the whole row as the JSON
value, written with ``df.write.format("sqliteq")`` into a fresh store's topic with the
10-field schema and into one without, taking turns after a warm-up round, best of
``--repeats``: the tasks encode and check, the driver commits.

``readers``:

One store topic with the 10-field schema of :mod:`benchmarks.schema_cost`, one batch read
of all of it per row, each written to Spark's ``noop`` sink (every column materialized),
the three taking turns, best of ``--repeats``, in one SparkSession:

- ``valueSchema=topic``: the columns the topic declared;
- ``.schema(DDL)``: the same columns given by the reader (the connector parses them);
- Kafka's columns with ``valueFormat=string`` and ``from_json(value, DDL)``, as a pipeline
  written for ``format("kafka")`` does.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

from benchmarks.report import local_session, print_table
from benchmarks.schema_events import SCHEMA, event
from spark_queue.store import Store

# The events of schema_events.event(i), made by Spark (doubles cast: a decimal literal is a
# DECIMAL, which the sink writes as a JSON string, and a DOUBLE field refuses).
_EVENT_COLUMNS = (
    "concat('d', id % 50) AS device", "'north' AS site", "id AS seq",
    "CAST(20.5 + id % 7 AS DOUBLE) AS temp", "CAST(0.4 AS DOUBLE) AS humidity",
    "80 AS battery", "true AS ok", "'2026-12-02T06:00:00Z' AS ts",
    "array('roof', 'east') AS tags",
    "named_struct('lat', CAST(52.1 AS DOUBLE), 'lon', CAST(4.3 AS DOUBLE)) AS loc")


def run(args: argparse.Namespace) -> int:
    if args.section == "spark-sink":
        return _sink(args)
    return _readers(args)


def _sink(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as workdir:
        spark = local_session("sq-bench-schema-sink", args.cores)
        try:
            events = spark.range(args.read_events).selectExpr(*_EVENT_COLUMNS).cache()
            assert events.count() == args.read_events
            best: dict[str, float] = {}
            for round_ in range(args.repeats + 1):  # the first round warms the JVM, workers
                for schema in (None, SCHEMA):
                    path = os.path.join(workdir, f"{round_}-{schema is None}.sqlite")
                    with Store(path) as store:
                        if schema is None:
                            store.topic("t").create()
                        else:
                            store.topic("t").set_schema(schema)
                    started = time.perf_counter()
                    (events.write.format("sqliteq").option("path", path).option("topic", "t")
                     .mode("append").save())
                    rate = args.read_events / (time.perf_counter() - started)
                    with Store(path) as store:
                        assert store.topic("t").latest_offset() == args.read_events
                    label = "10-field schema" if schema else "no schema"
                    if round_ > 0:
                        best[label] = max(best.get(label, 0.0), rate)
        finally:
            spark.stop()
    print_table("A topic's schema: the Spark sink's cost", [
        ("df.write into a topic, no schema", best["no schema"],
         "df.write into a topic, no schema"),
        ("df.write into a topic, 10-field schema", best["10-field schema"],
         "df.write into a topic, no schema")])
    return 0


def _readers(args: argparse.Namespace) -> int:
    from pyspark.sql import functions as F

    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "reads.sqlite")
        with Store(path) as store:
            store.topic("t").set_schema(SCHEMA)
            store.publish_many("t", (event(i) for i in range(args.read_events)))
        spark = local_session("sq-bench-schema-reads", args.cores)
        try:
            def reader() -> Any:
                return spark.read.format("sqliteq").option("path", path).option("topic", "t")

            readers = {
                "valueSchema=topic": lambda: reader().option("valueSchema", "topic").load(),
                ".schema(DDL)": lambda: reader().schema(SCHEMA).load(),
                "from_json(value, DDL)": lambda: reader().option("valueFormat", "string")
                .load().select(F.from_json("value", SCHEMA).alias("v")).select("v.*"),
            }
            best: dict[str, float] = {}
            for _ in range(args.repeats + 1):  # the first round warms the JVM and the workers
                for label, build in readers.items():
                    df = build()
                    started = time.perf_counter()
                    df.write.format("noop").mode("overwrite").save()
                    rate = args.read_events / (time.perf_counter() - started)
                    if _ > 0:
                        best[label] = max(best.get(label, 0.0), rate)
        finally:
            spark.stop()
    topic = best["valueSchema=topic"]
    print_table("A topic's schema: its readers' cost", [
        (".schema(DDL)", best[".schema(DDL)"], ".schema(DDL)"),
        ("valueSchema=topic", topic, ".schema(DDL)"),
        ("from_json(value, DDL)", best["from_json(value, DDL)"], "from_json(value, DDL)"),
        ("valueSchema=topic, against from_json", topic, "from_json(value, DDL)"),
    ])
    return 0
