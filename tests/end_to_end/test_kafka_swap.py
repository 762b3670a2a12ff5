"""A Kafka pipeline runs on a store file with only the format and the connection option changed.

Spark's own ``structured_kafka_wordcount.py`` example (shipped inside the
pyspark package; read from there, never copied) runs with ``format("kafka")``
-> ``format("sqliteq")`` and ``kafka.bootstrap.servers`` -> ``path`` and prints
exact word counts. The Kafka integration guide's read and write patterns run
the same way, with exact rows. What a Kafka user must still change on purpose
(``.mode("append")``, a checkpoint and a trigger to end the test) is listed in
docs/kafka.md.
"""

from __future__ import annotations

import collections
import json
import pathlib
import re
import time

import pyspark
import pytest
from pyspark.sql import functions as F

from spark_queue.store import Record, Store
from tests.end_to_end import drivers

EXAMPLE = (
    pathlib.Path(pyspark.__file__).parent
    / "examples/src/main/python/sql/streaming/structured_kafka_wordcount.py"
)
WORDCOUNT_WAIT_S = 400  # an upper bound for a failure; the test waits for the output itself


def swapped(source: str) -> str:
    """Kafka's example with exactly the two textual changes a user makes."""
    for kafka, ours in (('.format("kafka")', '.format("sqliteq")'),
                        ('"kafka.bootstrap.servers"', '"path"')):
        assert source.count(kafka) == 1, kafka
        source = source.replace(kafka, ours)
    return source


def console_batches(output: str) -> dict[int, dict[str, int]]:
    """``{batch id: {word: count}}`` from the console sink's tables."""
    batches = {}
    for match in re.finditer(r"Batch: (\d+)\n-+\n((?:[+|].*\n)+)", output):
        rows = [line.strip("|").split("|") for line in match.group(2).splitlines()
                if line.startswith("|")]
        header, body = rows[0], rows[1:]
        assert [c.strip() for c in header] == ["word", "count"], header
        batches[int(match.group(1))] = {w.strip(): int(c) for w, c in body}
    return batches


def wait_for_counts(proc, log: pathlib.Path, expected: dict[str, int]) -> None:
    deadline = time.monotonic() + WORDCOUNT_WAIT_S
    while time.monotonic() < deadline:
        output = log.read_text(errors="replace")
        if expected in console_batches(output).values():
            return
        assert proc.poll() is None, f"the example ended early:\n{output[-6000:]}"
        time.sleep(0.5)
    raise AssertionError(f"no batch printed {expected}:\n{log.read_text()[-6000:]}")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("subscribe_type", "topics"),
    [("subscribe", "lines"), ("subscribePattern", "li.*"), ("assign", '{"lines":[0]}')],
)
def test_sparks_kafka_wordcount_example_counts_exactly_with_format_and_path_swapped(
    tmp_path, subscribe_type, topics
):
    if not EXAMPLE.exists():
        pytest.skip(f"this pyspark ships no {EXAMPLE.name}")
    script = tmp_path / "structured_sqliteq_wordcount.py"
    script.write_text(swapped(EXAMPLE.read_text()))
    store_path = str(tmp_path / "wordcount.sqlite")
    first = ["the cat sat", "the dog sat on the cat"]
    more = ["a dog", "the end"]
    with Store(store_path) as store:
        store.publish_many("lines", first)
        store.publish_many("other", ["not counted"])
    env = drivers.driver_env(
        # Spark settings from the environment, as spark-submit users pass them: the
        # example itself stays as shipped.
        PYSPARK_SUBMIT_ARGS="--master local[2] --conf spark.ui.enabled=false "
        "--conf spark.ui.showConsoleProgress=false --conf spark.sql.shuffle.partitions=2 "
        f"--conf spark.sql.streaming.checkpointLocation={tmp_path / 'checkpoints'} pyspark-shell",
    )
    log = tmp_path / "driver.log"
    proc = drivers.start(script, store_path, subscribe_type, topics, env=env, log=log)
    try:
        # The default startingOffsets is earliest: the lines already stored are counted.
        wait_for_counts(proc, log, dict(collections.Counter(" ".join(first).split(" "))))
        with Store(store_path) as store:
            store.publish_many("lines", more)
        wait_for_counts(proc, log, dict(collections.Counter(" ".join(first + more).split(" "))))
    finally:
        drivers.kill_group(proc)


# -- the integration guide's read patterns -----------------------------------
@pytest.fixture
def kafka_like(store_path):
    """topic1 (30 events, keys k0.., one with headers), topic2 (3 events), other (1 event)."""
    with Store(store_path) as store:
        store.publish_many("topic1", [
            Record(f"v{i}", key=f"k{i}", headers={"h": f"x{i}"} if i == 0 else None)
            for i in range(30)
        ])
        store.publish_many("topic2", [Record(f"w{i}", key=f"j{i}") for i in range(3)])
        store.publish_many("other", ["o0"])
    return store_path


def stream_rows(df, tmp_path, name):
    """Every row the stream yields up to now (availableNow), sorted."""
    query = (df.writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / f"ckpt-{name}"))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    finally:
        query.stop()
    return sorted(tuple(r) for r in df.sparkSession.table(name).collect())


def kv(*pairs):
    return sorted(pairs)


def topic1_rows(start=0, end=30):
    return [(f"k{i}", f"v{i}") for i in range(start, end)]


def test_guide_stream_subscribe_one_topic(spark, tmp_path, kafka_like):
    df = (spark.readStream.format("sqliteq")
          .option("path", kafka_like)
          .option("subscribe", "topic1")
          .load())
    rows = stream_rows(df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)"),
                       tmp_path, "guide_subscribe_one")
    assert rows == kv(*topic1_rows())


def test_guide_stream_subscribe_one_topic_with_headers(spark, tmp_path, kafka_like):
    df = (spark.readStream.format("sqliteq")
          .option("path", kafka_like)
          .option("subscribe", "topic1")
          .option("includeHeaders", "true")
          .load())
    rows = stream_rows(
        df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)", "headers"),
        tmp_path, "guide_headers",
    )
    assert rows[0] == ("k0", "v0", [("h", bytearray(b"x0"))])
    assert [r[:2] for r in rows] == kv(*topic1_rows()) and all(r[2] is None for r in rows[1:])


def test_guide_stream_subscribe_several_topics(spark, tmp_path, kafka_like):
    df = (spark.readStream.format("sqliteq")
          .option("path", kafka_like)
          .option("subscribe", "topic1,topic2")
          .load())
    rows = stream_rows(df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)"),
                       tmp_path, "guide_subscribe_two")
    assert rows == kv(*topic1_rows(), *[(f"j{i}", f"w{i}") for i in range(3)])


def test_guide_stream_subscribe_pattern(spark, tmp_path, kafka_like):
    df = (spark.readStream.format("sqliteq")
          .option("path", kafka_like)
          .option("subscribePattern", "topic.*")
          .option("kafka.group.id", "ignored-here")  # a Kafka client option: warned, ignored
          .load())
    rows = stream_rows(df.selectExpr("topic", "CAST(value AS STRING)"), tmp_path, "guide_pattern")
    assert rows == sorted([("topic1", f"v{i}") for i in range(30)]
                          + [("topic2", f"w{i}") for i in range(3)])


def test_guide_stream_assign_partition_zero(spark, tmp_path, kafka_like):
    df = (spark.readStream.format("sqliteq")
          .option("path", kafka_like)
          .option("assign", '{"topic2":[0]}')
          .load())
    rows = stream_rows(df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)", "partition"),
                       tmp_path, "guide_assign")
    assert rows == [(f"j{i}", f"w{i}", 0) for i in range(3)]


def batch_rows(df):
    return sorted(tuple(r) for r in
                  df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)").collect())


def test_guide_batch_subscribe_one_topic_defaults_to_earliest_and_latest(spark, kafka_like):
    df = (spark.read.format("sqliteq")
          .option("path", kafka_like)
          .option("subscribe", "topic1")
          .load())
    assert batch_rows(df) == kv(*topic1_rows())


def test_guide_batch_explicit_kafka_offsets_json(spark, kafka_like):
    df = (spark.read.format("sqliteq")
          .option("path", kafka_like)
          .option("subscribe", "topic1,topic2")
          .option("startingOffsets", """{"topic1":{"0":23},"topic2":{"0":-2}}""")
          .option("endingOffsets", """{"topic1":{"0":27},"topic2":{"0":-1}}""")
          .load())
    assert batch_rows(df) == kv(*topic1_rows(23, 27), *[(f"j{i}", f"w{i}") for i in range(3)])


def test_guide_offsets_naming_partition_one_fail_at_load_naming_it(spark, kafka_like):
    # The guide's own JSON names partition "1" of topic1, which a one-partition topic lacks.
    with pytest.raises(Exception, match="names partition 1 of topic 'topic1'"):
        (spark.read.format("sqliteq")
         .option("path", kafka_like)
         .option("subscribe", "topic1,topic2")
         .option("startingOffsets", """{"topic1":{"0":23,"1":-2},"topic2":{"0":-2}}""")
         .load())


def test_guide_batch_subscribe_pattern_earliest_to_latest(spark, kafka_like):
    df = (spark.read.format("sqliteq")
          .option("path", kafka_like)
          .option("subscribePattern", "topic.*")
          .option("startingOffsets", "earliest")
          .option("endingOffsets", "latest")
          .load())
    assert batch_rows(df) == kv(*topic1_rows(), *[(f"j{i}", f"w{i}") for i in range(3)])


def test_batch_read_between_timestamps(spark, store_path):
    with Store(store_path) as store:
        store.publish_many("t", [Record(f"v{i}", timestamp_ms=1000 * i) for i in range(10)])
    df = (spark.read.format("sqliteq")
          .option("path", store_path)
          .option("subscribe", "t")
          .option("startingOffsetsByTimestamp", '{"t": {"0": 2500}}')
          .option("endingTimestamp", "6000")
          .load())
    assert sorted(r.offset for r in df.select("offset").collect()) == [3, 4, 5]


# -- the integration guide's write patterns ----------------------------------
def stored(path, topic):
    with Store(path) as store:
        return [(e.key, e.value) for e in store.read(topic)]


@pytest.fixture
def source_df(spark, store_path):
    """A DataFrame with Kafka's shape: key, value, and a topic column; and the store the guide's
    writes go to, made beforehand (as `sqliteq init` makes it, where Kafka has its topics)."""
    Store(store_path).close()
    return spark.createDataFrame(
        [("a", "1", "topic1"), ("b", "2", "topic2"), ("c", "3", "topic1")],
        "key STRING, value STRING, topic STRING",
    ).coalesce(1)


def test_guide_batch_write_to_the_topic_option(source_df, store_path):
    (source_df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")
     .write
     .format("sqliteq")
     .mode("append")  # Spark rejects the default errorifexists for Python data sources
     .option("path", store_path)
     .option("topic", "topic1")
     .save())
    assert stored(store_path, "topic1") == [("a", "1"), ("b", "2"), ("c", "3")]


def test_guide_batch_write_to_the_topic_column(source_df, store_path):
    (source_df.selectExpr("topic", "CAST(key AS STRING)", "CAST(value AS STRING)")
     .write
     .format("sqliteq")
     .mode("append")
     .option("path", store_path)
     .save())
    assert stored(store_path, "topic1") == [("a", "1"), ("c", "3")]
    assert stored(store_path, "topic2") == [("b", "2")]


@pytest.fixture
def kafka_stream(spark, store_path):
    """A stream read with Kafka's options, of topic 'in' holding Kafka-shaped rows."""
    with Store(store_path) as store:
        store.publish_many("in", [
            Record(json.dumps({"topic": t, "v": v}), key=k)
            for k, v, t in [("a", "1", "topic1"), ("b", "2", "topic2"), ("c", "3", "topic1")]
        ])
    return (spark.readStream.format("sqliteq").option("path", store_path)
            .option("subscribe", "in").load()
            .select("key", F.get_json_object(F.col("value").cast("string"), "$.v").alias("value"),
                    F.get_json_object(F.col("value").cast("string"), "$.topic").alias("topic")))


def run_to_end(writer, tmp_path):
    query = (writer.option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    finally:
        query.stop()


def test_guide_stream_write_to_the_topic_option(kafka_stream, store_path, tmp_path):
    run_to_end(
        kafka_stream.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")
        .writeStream
        .format("sqliteq")
        .option("path", store_path)
        .option("topic", "topic1"),
        tmp_path,
    )
    assert stored(store_path, "topic1") == [("a", "1"), ("b", "2"), ("c", "3")]


def test_guide_stream_write_to_the_topic_column(kafka_stream, store_path, tmp_path):
    run_to_end(
        kafka_stream.selectExpr("topic", "CAST(key AS STRING)", "CAST(value AS STRING)")
        .writeStream
        .format("sqliteq")
        .option("path", store_path)
        .option("kafka.acks", "all"),  # a Kafka producer option: warned, ignored
        tmp_path,
    )
    assert stored(store_path, "topic1") == [("a", "1"), ("c", "3")]
    assert stored(store_path, "topic2") == [("b", "2")]


def test_a_sink_batch_whose_headers_repeat_a_key_is_refused_whole(spark, store_path):
    df = spark.createDataFrame(
        [("ok", [("h", b"1")]), ("dup", [("trace", b"x"), ("trace", b"y")])],
        "value STRING, headers ARRAY<STRUCT<key: STRING, value: BINARY>>",
    ).coalesce(1)
    Store(store_path).close()
    with pytest.raises(Exception, match="header 'trace' in column 'headers' of row 1"):
        df.write.format("sqliteq").mode("append").option("path", store_path) \
            .option("topic", "out").save()
    with Store(store_path) as store:
        assert not store.topic("out").exists()
