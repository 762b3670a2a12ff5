"""The recipe of docs/outgrowing.md, run as written in a Spark driver of its own (the session
needs Spark's Kafka connector, which the suite's shared session does not load).

    python tests/kafka/handoff_driver.py WORKDIR BOOTSTRAP

In WORKDIR: the store gets events 0..299, the page's first Python block (the query on
sqliteq) reads them; producers go on writing the store (300..449), then stop; the page's
bash block exports, prints the starting offsets and removes the export's hold; producers
move to Kafka (450..599), in the page's cutover order; the page's
second Python block (the same query on Kafka, a new checkpoint) reads on. Between, a
batch read of the exported events through both sources compares every column. Prints
one ``RESULT <json>`` line: the ids in each output, the starting offsets, the comparison.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.kafka_broker import spark_package  # noqa: E402
from spark_queue.kafka.link import KafkaLink  # noqa: E402
from spark_queue.kafka.records import Content  # noqa: E402
from spark_queue.spark import get_or_create  # noqa: E402
from spark_queue.store import Record, Store  # noqa: E402
from tests.docs_pages import blocks  # noqa: E402

PAGE = "docs/outgrowing.md"


def both_sources_read_the_same_rows(spark, bootstrap: str, end: int) -> str:
    """The exported events as Spark's Kafka source and the sqliteq source give them: every
    column alike (headers compared as sets: Kafka keeps them in the export's order)."""
    ours = (spark.read.format("sqliteq").option("path", "app.sqlite")
            .option("topic", "clicks").option("includeHeaders", "true")
            .option("endingOffsets", json.dumps({"clicks": end})).load())
    kafka = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", "clicks").option("includeHeaders", "true")
             .option("startingOffsets", "earliest")
             .option("endingOffsets", json.dumps({"clicks": {"0": end}})).load())

    def rows(frame) -> list[tuple]:
        return [(*row[:-1], sorted((h.key, bytes(h.value)) for h in row.headers or []))
                for row in frame.orderBy("offset").collect()]

    mine, theirs = rows(ours), rows(kafka)
    if len(mine) != end or mine != theirs:
        first = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False))
                      if a != b), None)
        return f"{len(mine)} vs {len(theirs)} rows; first difference at {first}"
    return "same"


def main(workdir: str, bootstrap: str) -> None:
    os.chdir(workdir)
    os.environ["BOOTSTRAP"] = bootstrap
    os.environ["PATH"] = str(pathlib.Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]
    first, second = (block.code for block in blocks(PAGE, "python"))
    [shell] = blocks(PAGE, "bash")
    spark = get_or_create("handoff", delta=False, conf={
        "spark.jars.packages": spark_package(), "spark.sql.shuffle.partitions": "1"})

    with Store("app.sqlite") as store:
        store.publish_many("clicks", [
            Record({"id": i}, key=f"user-{i % 7}", headers={"n": str(i), "src": "web"},
                   timestamp_ms=1_700_000_000_000 + i) for i in range(300)])
    exec(compile(first, f"{PAGE} Python block 1", "exec"), {"spark": spark})
    with Store("app.sqlite") as store:  # producers still write the store after the stop
        store.publish_many("clicks", [{"id": i} for i in range(300, 450)])

    done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + shell.code],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the recipe's bash block failed:\n{done.stdout}{done.stderr}")

    same_rows = both_sources_read_the_same_rows(spark, bootstrap, 450)
    with Store("app.sqlite") as store:  # the recipe removed the export's hold on retention
        holds = [info.consumer for info in store.consumers()]

    with KafkaLink(bootstrap) as link:  # producers moved to Kafka; 0 ms: stamped when sent
        link.produce("clicks", [Content(None, json.dumps({"id": i}).encode(), (), 0)
                                for i in range(450, 600)])
        link.flush()
    exec(compile(second, f"{PAGE} Python block 2", "exec"), {"spark": spark})

    def ids(path: str) -> list[int]:
        return sorted(json.loads(row.json)["id"] for row in spark.read.parquet(path).collect())

    print("RESULT " + json.dumps({
        "store_query": ids("out/clicks"), "kafka_query": ids("out/clicks-kafka"),
        "starting_offsets": pathlib.Path("starting-offsets.json").read_text().strip(),
        "active": len(spark.streams.active), "same_rows": same_rows, "holds": holds,
    }), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
