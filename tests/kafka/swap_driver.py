"""The swap contract on a real broker: each Kafka pipeline of Spark's wordcount example and
the Structured Streaming + Kafka integration guide, run on ``format("kafka")`` and on
``format("sqliteq")`` over the same input, in ONE Spark driver (the session needs Spark's
Kafka connector, which the suite's shared session does not load).

    python tests/kafka/swap_driver.py WORKDIR BOOTSTRAP PREFIX

Every pipeline is written once; :func:`connect` is the one-line swap a user makes (the
format, and ``kafka.bootstrap.servers`` or ``path``). The input is a store whose topics are
exported to Kafka (offset for offset: the same keys, values, headers and timestamps on both
sides), topic names starting with PREFIX (the broker is shared by the session's tests).
Up to RUNNING_AT_ONCE streaming queries run at once (each ends by itself, availableNow):
most of a query's time is waiting, and one at a time they took minutes; all at once, the
sqliteq queries' Python workers failed to connect back to Spark on the loaded VM. Prints one
``RESULT <json>`` line: per case, the rows each format gave (or its error), and the seconds
each wave took.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import pathlib
import re
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pyspark.sql import DataFrame, Row, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from benchmarks.kafka_broker import spark_package  # noqa: E402
from spark_queue.kafka.client_config import KafkaSettings  # noqa: E402
from spark_queue.kafka.export import export_topics  # noqa: E402
from spark_queue.kafka.link import KafkaLink  # noqa: E402
from spark_queue.kafka.topic_checks import EXPORT_TOPIC_CONFIG  # noqa: E402
from spark_queue.spark import get_or_create  # noqa: E402
from spark_queue.store import Record, Store  # noqa: E402

FORMATS = ("kafka", "sqliteq")
RUNNING_AT_ONCE = 3
FIRST_LINES = ["the cat sat", "the dog sat on the cat"]
MORE_LINES = ["a dog", "the end"]


@dataclass
class Later:
    """A case's streaming query, started: ``rows()`` gives its result once it has ended."""

    query: object
    rows: Callable[[], list]


Case = Callable[[str], "list | Later"]


class Swap:
    """The input on both sides, and the pipelines run against either format."""

    def __init__(self, spark: SparkSession, workdir: pathlib.Path, bootstrap: str,
                 prefix: str) -> None:
        self.spark = spark
        self.workdir = workdir
        self.store = str(workdir / "swap.sqlite")
        self.settings = KafkaSettings(bootstrap, timeout_s=30)
        self.p = prefix

    # -- the input: a store, exported -------------------------------------------
    def write_input(self) -> None:
        p = self.p
        with Store(self.store) as store:
            store.publish_many(p + "topic1", [
                Record(f"v{i}", key=f"k{i}", headers={"h": f"x{i}"} if i % 10 == 0 else None,
                       timestamp_ms=1_700_000_000_000 + i) for i in range(30)])
            store.publish_many(p + "topic2", [Record(f"w{i}", key=f"j{i}") for i in range(3)])
            store.publish_many(p + "other", ["o0"])
            store.publish_many(p + "lines", FIRST_LINES)
            store.publish_many(p + "in", [
                Record(json.dumps({"topic": p + t, "v": v}), key=k)
                for k, v, t in [("a", "1", "souta"), ("b", "2", "soutb"), ("c", "3", "souta")]])
        self.export()
        with KafkaLink(self.settings) as link:  # the sinks' Kafka topics, one partition each
            for name in ("bw", "bwd", "sw", "outa", "outb", "souta", "soutb"):
                link.create_topic(p + name, EXPORT_TOPIC_CONFIG)

    def export(self) -> None:
        """The input topics into Kafka (a rerun continues them); never the sinks' topics,
        which each format writes on its own side."""
        inputs = ("topic1", "topic2", "other", "lines", "in")
        export_topics(self.store, self.settings, [self.p + name for name in inputs])

    # -- the one line a user changes -----------------------------------------------
    def connect(self, builder, fmt: str):
        """``builder.format(fmt)`` with the connection option of that format."""
        if fmt == "kafka":
            return builder.format("kafka").option("kafka.bootstrap.servers",
                                                  self.settings.bootstrap)
        return builder.format("sqliteq").option("path", self.store)

    # -- running ---------------------------------------------------------------------
    def drain(self, frame: DataFrame, name: str, mode: str = "append") -> Later:
        """Every row a stream gives up to now (availableNow into a memory table)."""
        writer = frame.writeStream.format("memory").queryName(name).outputMode(mode)
        return Later(self.start(writer, name), lambda: rows(self.spark.table(name)))

    def start(self, writer, name: str):
        return (writer.option("checkpointLocation", str(self.workdir / "checkpoints" / name))
                .trigger(availableNow=True).start())

    def written(self, fmt: str, *topics: str) -> list:
        """What a sink wrote, read back through the same format."""
        frame = (self.connect(self.spark.read, fmt)
                 .option("subscribe", ",".join(self.p + t for t in topics)).load())
        return rows(frame.selectExpr("topic", "offset", "CAST(key AS STRING)",
                                     "CAST(value AS STRING)"))

    def stream(self, fmt: str, **options: str):
        reader = self.connect(self.spark.readStream, fmt)
        for name, value in options.items():
            reader = reader.option(name, value)
        return reader.load()

    def batch(self, fmt: str, **options: str):
        reader = self.connect(self.spark.read, fmt)
        for name, value in options.items():
            reader = reader.option(name, value)
        return reader.load()

    # -- Spark's structured_kafka_wordcount.py: its logic, both formats ---------------
    def wordcount(self, fmt: str, subscribe_type: str, topics: str, name: str) -> Later:
        # The example leaves startingOffsets at its default, which differs on purpose
        # (docs/kafka.md; see default_start); earliest on both compares the counts.
        lines = self.stream(fmt, **{subscribe_type: topics, "startingOffsets": "earliest"})
        lines = lines.selectExpr("CAST(value AS STRING)")
        words = lines.select(F.explode(F.split(lines.value, " ")).alias("word"))
        return self.drain(words.groupBy("word").count(), name, "complete")

    def wordcount_cases(self) -> dict[str, Case]:
        p = self.p
        return {
            "wordcount_subscribe": lambda f: self.wordcount(f, "subscribe", p + "lines",
                                                            f"wc_sub_{f}"),
            "wordcount_pattern": lambda f: self.wordcount(
                f, "subscribePattern", re.escape(p) + "lin.*", f"wc_pat_{f}"),
            "wordcount_assign": lambda f: self.wordcount(
                f, "assign", json.dumps({p + "lines": [0]}), f"wc_asg_{f}"),
        }

    # -- the integration guide's reads -------------------------------------------------
    def read_cases(self) -> dict[str, Case]:
        p = self.p
        kv = ("CAST(key AS STRING)", "CAST(value AS STRING)")
        earliest = {"startingOffsets": "earliest"}  # Kafka's stream default is latest
        return {
            "stream_subscribe_one": lambda f: self.drain(
                self.stream(f, subscribe=p + "topic1", **earliest).selectExpr(*kv), f"s1_{f}"),
            "stream_headers": lambda f: self.drain(
                self.stream(f, subscribe=p + "topic1", includeHeaders="true", **earliest)
                .selectExpr(*kv, "headers"), f"sh_{f}"),
            "stream_subscribe_several": lambda f: self.drain(
                self.stream(f, subscribe=f"{p}topic1,{p}topic2", **earliest).selectExpr(*kv),
                f"s2_{f}"),
            "stream_pattern": lambda f: self.drain(
                self.stream(f, subscribePattern=re.escape(p) + "topic.*", **earliest)
                .selectExpr("topic", *kv), f"sp_{f}"),
            "stream_assign": lambda f: self.drain(
                self.stream(f, assign=json.dumps({p + "topic2": [0]}), **earliest)
                .selectExpr(*kv, "partition"), f"sa_{f}"),
            "stream_every_column": lambda f: self.drain(
                self.stream(f, subscribe=f"{p}topic1,{p}topic2", includeHeaders="true",
                            **earliest), f"sc_{f}"),
            "batch_subscribe_one": lambda f: rows(
                self.batch(f, subscribe=p + "topic1").selectExpr(*kv)),
            "batch_offsets_json": lambda f: rows(self.batch(
                f, subscribe=f"{p}topic1,{p}topic2",
                startingOffsets=json.dumps({p + "topic1": {"0": 23}, p + "topic2": {"0": -2}}),
                endingOffsets=json.dumps({p + "topic1": {"0": 27}, p + "topic2": {"0": -1}}),
            ).selectExpr("topic", "offset", *kv)),
            "batch_pattern": lambda f: rows(self.batch(
                f, subscribePattern=re.escape(p) + "topic.*", startingOffsets="earliest",
                endingOffsets="latest").selectExpr("topic", *kv)),
            "batch_every_column": lambda f: rows(self.batch(
                f, subscribe=f"{p}topic1,{p}topic2,{p}other", includeHeaders="true")),
        }

    # -- the integration guide's writes ------------------------------------------------
    def keyed_rows(self) -> DataFrame:
        p = self.p
        return self.spark.createDataFrame(
            [("a", "1", p + "outa"), ("b", "2", p + "outb"), ("c", "3", p + "outa")],
            "key STRING, value STRING, topic STRING").coalesce(1)

    def in_stream(self, fmt: str) -> DataFrame:
        """Kafka-shaped rows (key, value, topic) from the input topic 'in', as a stream."""
        value = F.col("value").cast("string")
        return (self.stream(fmt, subscribe=self.p + "in", startingOffsets="earliest")
                .select("key", F.get_json_object(value, "$.v").alias("value"),
                        F.get_json_object(value, "$.topic").alias("topic")))

    def write_cases(self) -> dict[str, Case]:
        p = self.p

        def batch_topic_option(f: str) -> list:
            (self.connect(self.keyed_rows().selectExpr("CAST(key AS STRING)",
                                                       "CAST(value AS STRING)").write, f)
             .mode("append").option("topic", p + "bw").save())
            return self.written(f, "bw")

        def batch_topic_column(f: str) -> list:
            (self.connect(self.keyed_rows().selectExpr(
                "topic", "CAST(key AS STRING)", "CAST(value AS STRING)").write, f)
             .mode("append").save())
            return self.written(f, "outa", "outb")

        def stream_topic_option(f: str) -> Later:
            query = self.start(self.connect(self.in_stream(f).selectExpr(
                "CAST(key AS STRING)", "CAST(value AS STRING)").writeStream, f)
                .option("topic", p + "sw"), f"sw_{f}")
            return Later(query, lambda: self.written(f, "sw"))

        def stream_topic_column(f: str) -> Later:
            query = self.start(self.connect(self.in_stream(f).selectExpr(
                "topic", "CAST(key AS STRING)", "CAST(value AS STRING)").writeStream, f),
                f"swc_{f}")
            return Later(query, lambda: self.written(f, "souta", "soutb"))

        return {"write_batch_topic_option": batch_topic_option,
                "write_batch_topic_column": batch_topic_column,
                "write_stream_topic_option": stream_topic_option,
                "write_stream_topic_column": stream_topic_column}

    # -- where the formats differ on purpose (docs/kafka.md) ---------------------------
    def difference_cases(self) -> dict[str, Case]:
        p = self.p

        def default_start(f: str) -> Later:
            """No startingOffsets: Kafka's stream starts at latest, sqliteq's at earliest."""
            return self.drain(self.stream(f, subscribe=p + "topic1")
                              .selectExpr("CAST(value AS STRING)"), f"sd_{f}")

        def default_save_mode(f: str) -> list:
            """No .mode(): Kafka's sink takes errorifexists, Spark refuses it for sqliteq."""
            try:
                (self.connect(self.keyed_rows().select("key", "value").write, f)
                 .option("topic", p + "bwd").save())
            except Exception as exc:  # what Spark says is the result compared
                found = re.search(r"UNSUPPORTED_DATA_SOURCE_SAVE_MODE", str(exc))
                return ["refused", found.group(0) if found else str(exc)[:300]]
            return ["written", self.written(f, "bwd")]

        return {"default_starting_offsets": default_start, "default_save_mode": default_save_mode}


def plain(value):
    """A Spark value as JSON: bytes as base64, times as ISO text, rows and arrays as lists."""
    if isinstance(value, (bytes, bytearray)):
        return "b64:" + base64.b64encode(bytes(value)).decode()
    if isinstance(value, (Row, list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return value


def rows(frame: DataFrame) -> list:
    return sorted((plain(row) for row in frame.collect()), key=json.dumps)


def main(workdir: str, bootstrap: str, prefix: str) -> None:
    started = time.monotonic()
    work = pathlib.Path(workdir)
    os.chdir(work)
    spark = get_or_create("swap-contract", delta=False, conf={
        "spark.jars.packages": spark_package(), "spark.sql.shuffle.partitions": "1"})
    swap = Swap(spark, work, bootstrap, prefix)
    swap.write_input()
    session_s = time.monotonic() - started
    results: dict[str, dict] = {}
    waves: dict[str, float] = {}

    def finish(found: dict, fmt: str, later: Later) -> None:
        try:
            later.query.awaitTermination()  # type: ignore[attr-defined]
            found[fmt] = later.rows()
        except Exception:  # one case's failure is reported, the others still run
            found[fmt + "_error"] = traceback.format_exc()[-3000:]

    def run(wave: str, cases: dict[str, Case]) -> None:
        """Every case on both formats: batch cases one by one, streaming queries up to
        RUNNING_AT_ONCE together, each one's rows read once it ended."""
        begun = time.monotonic()
        running: list[tuple[dict, str, Later]] = []
        for name, case in cases.items():
            for fmt in FORMATS:
                found = results.setdefault(name, {})
                if len(running) >= RUNNING_AT_ONCE:
                    finish(*running.pop(0))
                try:
                    outcome = case(fmt)
                except Exception:
                    found[fmt + "_error"] = traceback.format_exc()[-3000:]
                    continue
                if isinstance(outcome, Later):
                    running.append((found, fmt, outcome))
                else:
                    found[fmt] = outcome
        for pending in running:
            finish(*pending)
        waves[wave] = time.monotonic() - begun

    run("cases", {**swap.wordcount_cases(), **swap.read_cases(), **swap.write_cases(),
                  **swap.difference_cases()})
    # The wordcount goes on from its checkpoints once more lines arrive (both sides).
    with Store(swap.store) as store:
        store.publish_many(prefix + "lines", MORE_LINES)
    swap.export()
    more = {f"{name}_continued": case for name, case in swap.wordcount_cases().items()
            if name == "wordcount_subscribe"}
    run("continued", more)
    print("RESULT " + json.dumps({"cases": results, "session_s": session_s, "waves_s": waves,
                                  "total_s": time.monotonic() - started}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
