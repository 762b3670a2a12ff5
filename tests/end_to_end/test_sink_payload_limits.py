"""The sqliteq sink under payload size limits: a row over the limit fails its batch whole."""

from __future__ import annotations

import json
import os

import pytest
from pyspark.errors import StreamingQueryException

import spark_queue
from spark_queue.store import Store
from spark_queue.store.floor import sinks


@pytest.fixture(autouse=True)
def _registered(spark):
    spark_queue.register(spark)


def _ledger(path):
    with Store(path) as store:
        return sinks.list_ledger(store.conn)


def test_a_row_over_the_topic_limit_fails_the_batch_whole_naming_its_position(spark, store_path):
    with Store(store_path) as store:
        store.topic("t").set_limits(max_payload_bytes=4)
    rows = [("a",), ("bb",), ("cccc",), ("ddddd",), ("e",)]
    df = spark.createDataFrame(rows, "value STRING").coalesce(1)  # one task: the order is kept
    with pytest.raises(Exception, match=r"topic 't' refuses row 3 of the batch.*5 bytes"):
        (
            df.write.format("sqliteq").mode("append").option("topic", "t")
            .option("sinkId", "daily").option("batchId", 0).save(store_path)
        )
    with Store(store_path) as store:
        assert store.topic("t").bounds() == (0, 0)
    assert _ledger(store_path) == []


def test_a_micro_batch_over_the_queue_limit_fails_whole_and_earlier_batches_stay(
    spark, tmp_path, store_path
):
    with Store(store_path) as store:
        store.queue("work", max_payload_bytes=8)
    src = tmp_path / "in"
    src.mkdir()
    batches = [["ok-1", "ok-2"], ["ok-3", "x" * 9, "ok-4"]]
    for i, values in enumerate(batches):
        part = src / f"part-{i:03d}.json"
        part.write_text("".join(json.dumps({"value": v}) + "\n" for v in values))
        os.utime(part, (1_700_000_000 + i, 1_700_000_000 + i))  # the file source orders by mtime
    stream = (
        spark.readStream.schema("value STRING").option("maxFilesPerTrigger", 1)
        .json(str(src)).coalesce(1)
    )
    query = (
        stream.writeStream.format("sqliteq").option("path", store_path).option("queue", "work")
        .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start()
    )
    try:
        with pytest.raises(StreamingQueryException, match="queue 'work' refuses row 1 of the"):
            query.awaitTermination()
    finally:
        query.stop()
    with Store(store_path) as store:
        assert [j.payload for j in store.queue("work").peek(10)] == ["ok-1", "ok-2"]
    [entry] = _ledger(store_path)
    assert (entry.last_batch_id, entry.rows) == (0, 2)
