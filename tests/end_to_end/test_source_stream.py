"""The streaming source end to end in the shared local[2] session, in every read mode.

Every test runs with ``latencyMode=auto`` (the default: small micro-batches
ship with the plan, larger ones are read by executors), ``throughput``
(executors read each micro-batch) and ``low`` (the driver's planning process
reads it): the readers keep one contract.
"""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from pyspark.errors import StreamingQueryException

from spark_queue.store import Record, Store
from tests.conftest import spark_master
from tests.end_to_end import source_helpers
from tests.end_to_end.source_helpers import TIMEOUT_S, run_available_now, source_progress, stream

# latencyMode=low reads every micro-batch in the driver's planning process: executors in
# JVMs of their own (the local-cluster rerun) change nothing for it.
MODES = ["auto", "throughput"] + ([] if spark_master().startswith("local-cluster") else ["low"])


@pytest.fixture(params=MODES, autouse=True)
def latency_mode(request, monkeypatch):
    monkeypatch.setattr(source_helpers, "STREAM_DEFAULTS", {"latencyMode": request.param})
    return request.param


@pytest.fixture
def ckpt(tmp_path):
    return str(tmp_path / "checkpoint")


def offsets_of(batches):
    return [row[1] for _, rows in batches for row in rows]


def test_available_now_reads_each_offset_once_within_max_rows_and_restarts_exactly(
    spark, store, store_path, ckpt
):
    store.publish_many("events", ({"n": i} for i in range(10_000)))
    batches, query = run_available_now(
        spark, store_path, ckpt, topic="events", maxRowsPerTrigger=1000
    )
    assert sorted(offsets_of(batches)) == list(range(10_000))
    assert max(len(rows) for _, rows in batches) <= 1000
    progress = source_progress(query)
    assert sum(rows for rows, _, _ in progress) == 10_000
    assert max(rows for rows, _, _ in progress) <= 1000

    store.publish_many("events", ({"n": i} for i in range(5_000)))
    batches, _ = run_available_now(
        spark, store_path, ckpt, topic="events", maxRowsPerTrigger=1000
    )
    assert sorted(offsets_of(batches)) == list(range(10_000, 15_000))
    assert max(len(rows) for _, rows in batches) <= 1000


def test_progress_reports_the_source_latest_offset_for_lag(
    spark, store, store_path, ckpt, latency_mode
):
    store.publish_many("events", range(2_500))
    _, query = run_available_now(spark, store_path, ckpt, topic="events", maxRowsPerTrigger=1000)
    progress = [p for p in source_progress(query) if p[0] > 0]
    assert [p[0] for p in progress] == [1000, 1000, 500]
    if latency_mode == "low":
        # Spark asks a simple reader for no latest offset (documented: no lag in this mode).
        assert all(p[1] is None for p in progress)
        assert progress[-1][2] == {"events": 2500}
        return
    # Lag = latestOffset - endOffset: 1500 after the first batch, 0 at the end.
    first_rows, first_latest, first_end = progress[0]
    assert first_latest == {"events": 2500} and first_end == {"events": 1000}
    assert progress[-1][1] == progress[-1][2] == {"events": 2500}


def test_driver_shipped_read_path_in_local_mode(spark, store, store_path, ckpt):
    store.publish_many("events", ({"n": i} for i in range(3_000)))
    batches, _ = run_available_now(
        spark, store_path, ckpt, topic="events", maxRowsPerTrigger=1000, readPath="driver",
        rowsPerPartition=400,
    )
    assert sorted(offsets_of(batches)) == list(range(3_000))
    assert max(len(rows) for _, rows in batches) <= 1000


def test_consumer_commits_and_committed_start_resumes_at_saved_offsets(
    spark, store, store_path, tmp_path
):
    store.publish_many("events", range(3_000))
    run_available_now(
        spark, store_path, str(tmp_path / "c1"), topic="events", consumer="app",
        maxRowsPerTrigger=1000,
    )
    saved = store.committed_offsets("app")["events"]
    # Spark commits batch N while planning N+1: saved offsets trail by up to one batch.
    assert 2_000 <= saved <= 3_000
    store.publish_many("events", range(500))
    batches, _ = run_available_now(
        spark, store_path, str(tmp_path / "c2"), topic="events", consumer="app",
        startingOffsets="committed",
    )
    assert sorted(offsets_of(batches)) == list(range(saved, 3_500))


def test_fail_on_data_loss_names_topic_requested_and_earliest(spark, store, store_path, tmp_path):
    store.publish_many("events", range(100))
    store.topic("events").prune(retention_rows=40)  # earliest is now 60
    with pytest.raises(StreamingQueryException) as info:
        run_available_now(
            spark, store_path, str(tmp_path / "strict"), topic="events",
            startingOffsets='{"events": 10}',
        )
    message = str(info.value)
    assert "'events'" in message and "requested offset 10" in message
    assert "earliest available offset 60" in message

    batches, _ = run_available_now(
        spark, store_path, str(tmp_path / "lenient"), topic="events",
        startingOffsets='{"events": 10}', failOnDataLoss="false",
    )
    assert sorted(offsets_of(batches)) == list(range(60, 100))


def test_topics_created_while_a_pattern_query_runs_are_read_from_offset_zero(
    spark, store, store_path, ckpt
):
    store.publish_many("ev-1", range(3))
    query = (
        stream(spark, store_path, topicPattern="ev-.*")
        .writeStream.format("memory").queryName("pattern_topics")
        .option("checkpointLocation", ckpt).start()
    )
    try:
        query.processAllAvailable()
        store.publish_many("ev-2", range(4))
        store.publish_many("other", range(4))
        store.publish_many("ev-1", range(2))
        query.processAllAvailable()
        rows = spark.sql("SELECT topic, offset FROM pattern_topics").collect()
    finally:
        query.stop()
    assert sorted(tuple(r) for r in rows) == [("ev-1", i) for i in range(5)] + [
        ("ev-2", i) for i in range(4)
    ]


def test_min_rows_per_trigger_waits_for_rows_or_the_delay(spark, store, store_path, ckpt):
    batches = []
    arrived = threading.Event()

    def collect(df, batch_id):
        count = df.count()
        if count:
            batches.append((time.monotonic(), count))
            arrived.set()

    before_start = time.monotonic()
    query = (
        stream(spark, store_path, topic="events", minRowsPerTrigger=500, maxTriggerDelay="2s")
        .writeStream.foreachBatch(collect).option("checkpointLocation", ckpt)
        .trigger(processingTime="100 milliseconds").start()
    )
    try:
        store.publish_many("events", range(200))
        # Fewer than 500 rows: nothing until the 2 s delay (counted from the query's start).
        assert arrived.wait(TIMEOUT_S)
        first_at, first_rows = batches[0]
        assert first_rows == 200
        assert first_at - before_start >= 2.0
        # 500 rows: the minimum is met, they go in one batch.
        arrived.clear()
        store.publish_many("events", range(500))
        assert arrived.wait(TIMEOUT_S)
        assert batches[1][1] == 500
    finally:
        query.stop()


def test_min_rows_per_trigger_holds_a_small_backlog(spark, store, store_path, ckpt):
    store.topic("events").create()
    seen = []

    query = (
        stream(spark, store_path, topic="events", minRowsPerTrigger=500, maxTriggerDelay="10m")
        .writeStream.foreachBatch(lambda df, _: seen.append(df.count()))
        .option("checkpointLocation", ckpt).start()
    )
    try:
        store.publish_many("events", range(499))
        query.processAllAvailable()
        assert sum(seen) == 0
        store.publish_many("events", range(1))
        query.processAllAvailable()
        assert sum(seen) == 500 and max(seen) == 500
    finally:
        query.stop()


def test_starting_offsets_latest_and_timestamp(spark, store, store_path, tmp_path):
    store.publish_many("events", [Record(i, timestamp_ms=1_000 + i) for i in range(10)])
    batches, _ = run_available_now(
        spark, store_path, str(tmp_path / "a"), topic="events", startingOffsets="latest"
    )
    assert offsets_of(batches) == []
    store.publish_many("events", [Record(i, timestamp_ms=5_000 + i) for i in range(5)])
    batches, _ = run_available_now(
        spark, store_path, str(tmp_path / "b"), topic="events",
        startingTimestamp="1970-01-01T00:00:05.002Z",
    )
    assert sorted(offsets_of(batches)) == [12, 13, 14]
    batches, _ = run_available_now(
        spark, store_path, str(tmp_path / "c"), topic="events", startingOffsets='{"events": 7}'
    )
    assert sorted(offsets_of(batches)) == list(range(7, 15))


def test_bad_option_fails_the_stream_at_load(spark, store_path):
    Store(store_path).close()
    with pytest.raises(Exception, match="'maxRowsPerTrigger' must be a positive integer; got '0'"):
        stream(spark, store_path, topic="t", maxRowsPerTrigger=0)
    # Spark's schema() call cannot tell a stream from a batch read, so a batch-only option
    # fails the stream at start, before any task: alone, without pyspark's runner adding
    # an UnboundLocalError (connector/source/refused_reader.py).
    for name, value in (("endingOffsets", "latest"), ("endingTimestamp", "1700000000000")):
        with pytest.raises(Exception, match=f"'{name}'.*batch reads") as raised:
            query = stream(spark, store_path, topic="t", **{name: value}).writeStream.format(
                "noop"
            ).start()
            try:
                query.awaitTermination(TIMEOUT_S)
            finally:
                query.stop()
        assert "UnboundLocalError" not in str(raised.value)


def test_bad_option_with_a_user_schema_fails_at_start_before_any_task(spark, store_path, ckpt):
    Store(store_path).close()
    df = (
        spark.readStream.format("sqliteq").schema("id LONG")
        .option("path", store_path).option("topic", "t").option("startingOffsets", "newest")
        .load()
    )
    with pytest.raises(Exception, match="'startingOffsets' must be .*got 'newest'"):
        query = df.writeStream.format("noop").option("checkpointLocation", ckpt).start()
        try:
            query.awaitTermination(TIMEOUT_S)
        finally:
            query.stop()


def test_a_batch_that_failed_replays_exactly_the_same_rows_after_restart(
    spark, store, store_path, ckpt
):
    store.publish_many("events", range(2_500))
    seen = []

    def fail_second_batch(df, batch_id):
        rows = sorted(r.offset for r in df.select("offset").collect())
        seen.append((batch_id, rows))
        if batch_id == 1:
            raise RuntimeError("planned failure in batch 1")

    query = (
        stream(spark, store_path, topic="events", maxRowsPerTrigger=1000)
        .writeStream.foreachBatch(fail_second_batch).option("checkpointLocation", ckpt)
        .trigger(availableNow=True).start()
    )
    with pytest.raises(StreamingQueryException, match="planned failure in batch 1"):
        query.awaitTermination(TIMEOUT_S)
    query.stop()
    # More rows arrive before the restart: the replay must not take any of them.
    store.publish_many("events", range(500))
    batches, _ = run_available_now(spark, store_path, ckpt, topic="events", maxRowsPerTrigger=1000)
    failed = dict(seen)[1]
    assert failed == list(range(1_000, 2_000))
    replayed = dict(batches)[1]
    assert sorted(offset for _, offset in replayed) == failed
    assert sorted(offsets_of(batches)) == list(range(1_000, 3_000))


def test_a_kafka_checkpoint_restarted_on_sqliteq_fails_naming_another_source(
    spark, store, store_path, ckpt
):
    """Kafka's source writes {"t": {"0": n}} to the offsets log; a pipeline swapped to
    sqliteq on that checkpoint fails saying so (docs/kafka.md), not with a TypeError."""
    store.publish_many("t", range(5))
    run_available_now(spark, store_path, ckpt, topic="t")
    log = os.path.join(ckpt, "offsets", "0")
    with open(log) as f:
        lines = f.read().splitlines()
    assert json.loads(lines[-1])["t"] == 5
    with open(log, "w") as f:
        f.write("\n".join([*lines[:-1], json.dumps({"t": {"0": 5}})]))
    # Hadoop's local file system keeps a checksum beside each log file; as Kafka's source
    # wrote the file, there is none of ours.
    crc = os.path.join(ckpt, "offsets", ".0.crc")
    if os.path.exists(crc):
        os.remove(crc)
    store.publish_many("t", range(5))
    with pytest.raises(Exception, match="written by another source.*new checkpoint location"):
        run_available_now(spark, store_path, ckpt, topic="t")


def test_a_stream_on_a_missing_named_topic_reports_it_and_reads_it_once_created(
    spark, store, store_path, ckpt, latency_mode
):
    # Issue 34: a typo (`clickz`) read nothing forever and said nothing. The stream waits for
    # the topic (a producer may create it later), reports it, and reads it from offset 0.
    store.publish_many("clicks", range(3))
    batches, query = run_available_now(spark, store_path, ckpt, topics="clicks,clickz")
    assert sorted(offsets_of(batches)) == [0, 1, 2]
    if latency_mode != "low":  # Spark asks a simple reader for no latest offset
        latest = [p[1] for p in source_progress(query) if p[1]]
        assert latest and latest[-1] == {"clicks": 3, "clickz": None}
    store.publish_many("clickz", ["late"])
    batches, _ = run_available_now(spark, store_path, ckpt, topics="clicks,clickz")
    assert [row for _, rows in batches for row in rows] == [("clickz", 0)]
