"""``bench schema --section readers``: what reading a topic's declared columns costs a Spark
reader (issue 61 asks >= 0.9x the same reader given the schema itself).

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


def run(args: argparse.Namespace) -> int:
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
