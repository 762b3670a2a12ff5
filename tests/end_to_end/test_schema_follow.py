"""follow_schema: a valueSchema=topic stream into Delta (mergeSchema) keeps going across a
backward-compatible change of its topic's schema, every event in Delta once, the new column
null before the change and filled from it on; any other failure is not retried."""

from __future__ import annotations

import glob
import os
import time

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql.types import DataType

from spark_queue.errors import SchemaChange
from spark_queue.spark import follow_schema
from spark_queue.store import Store, TopicSchema
from tests.end_to_end.source_helpers import TIMEOUT_S, stream

pytestmark = pytest.mark.slow

DDL = "id BIGINT NOT NULL, temp DOUBLE"
WIDER = DDL + ", site STRING"
N, M = 30, 20


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def delta_rows(spark, table) -> list[tuple]:
    """(id, temp, site) of every row in the table, sorted; none before its first commit."""
    if not glob.glob(os.path.join(table, "_delta_log", "*.json")):
        return []
    df = spark.read.format("delta").load(table)
    site = "site" if "site" in df.columns else None
    return sorted((row.id, row.temp, row[site] if site else None) for row in df.collect())


def publish(store, ids, site=None):
    store.publish_many("t", [{"id": i, "temp": i / 2, **({"site": site} if site else {})}
                             for i in ids])


def expected(changed_at: int, total: int) -> list[tuple]:
    return [(i, i / 2, None if i < changed_at else "roof") for i in range(total)]


@pytest.fixture
def table(tmp_path):
    return str(tmp_path / "bronze")


def starter(spark, store_path, checkpoint, table, before_start=None, **trigger):
    """The start callable: the whole query, load() included, on every call."""
    starts = []

    def start():
        df = stream(spark, store_path, topic="t", valueSchema="topic",
                    startingOffsets="earliest")
        if before_start is not None and not starts:
            before_start()
        starts.append(df.columns)
        return (df.writeStream.format("delta").option("mergeSchema", "true")
                .option("checkpointLocation", checkpoint).trigger(**trigger).start(table))

    return start, starts


def test_a_backward_compatible_change_keeps_the_stream_going_with_the_new_column(
        spark, store_path, tmp_path, table):
    with Store(store_path) as store:
        store.topic("t").set_schema(DDL)
        publish(store, range(N))
        start, starts = starter(spark, store_path, str(tmp_path / "ckpt"), table,
                                processingTime="200 milliseconds")
        follow = follow_schema(start)
        try:
            wait_until(lambda: len(delta_rows(spark, table)) == N, "the first N events")
            store.topic("t").set_schema(WIDER)
            publish(store, range(N, N + M), site="roof")
            wait_until(lambda: len(delta_rows(spark, table)) >= N + M, "the M new events")
            assert follow.active and follow.query.isActive
            assert follow.changes == [SchemaChange("t", 1, 2, "backward")]
            assert starts == [["id", "temp"], ["id", "temp", "site"]]
            assert delta_rows(spark, table) == expected(N, N + M)
        finally:
            follow.stop()
    assert not follow.active and not follow.query.isActive
    assert follow.await_termination(0)


def test_an_available_now_run_drains_across_the_change(spark, store_path, tmp_path, table):
    with Store(store_path) as store:
        store.topic("t").set_schema(DDL)
        publish(store, range(N))

        def change():  # after the first load(): that query reads version 1's columns
            store.topic("t").set_schema(WIDER)
            publish(store, range(N, N + M), site="roof")

        start, starts = starter(spark, store_path, str(tmp_path / "ckpt"), table,
                                before_start=change, availableNow=True)
        follow = follow_schema(start)
        try:
            assert follow.await_termination(TIMEOUT_S), "the availableNow drain did not end"
        finally:
            follow.stop()
    assert follow.changes == [SchemaChange("t", 1, 2, "backward")] and len(starts) == 2
    assert delta_rows(spark, table) == expected(N, N + M)


def test_a_plain_query_fails_at_the_change_naming_both_versions(spark, store_path, tmp_path,
                                                               table):
    with Store(store_path) as store:
        store.topic("t").set_schema(DDL)
        publish(store, range(N))
        start, _ = starter(spark, store_path, str(tmp_path / "ckpt"), table,
                           before_start=lambda: store.topic("t").set_schema(WIDER),
                           availableNow=True)
        query = start()
        try:
            with pytest.raises(StreamingQueryException, match=(
                    r"(?s)\[sqliteq-schema-changed topic=t from=1 to=2 compatibility=backward\]"
                    r".*changed from version 1 to version 2")):
                query.awaitTermination(TIMEOUT_S)
        finally:
            query.stop()
    assert len(delta_rows(spark, table)) == N  # every event before the change, committed


def test_another_failure_is_raised_as_is_and_not_retried(spark, store_path, tmp_path):
    with Store(store_path) as store:
        store.topic("t").set_schema(DDL)
        publish(store, range(3))
    starts = []

    def fail(_df, _batch_id):
        raise RuntimeError("the sink is down")

    def start():
        starts.append(1)
        return (stream(spark, store_path, topic="t", valueSchema="topic",
                       startingOffsets="earliest").writeStream.foreachBatch(fail)
                .option("checkpointLocation", str(tmp_path / "ckpt")).start())

    follow = follow_schema(start)
    try:
        with pytest.raises(StreamingQueryException, match="the sink is down"):
            follow.await_termination(TIMEOUT_S)
    finally:
        follow.stop()
    assert starts == [1] and follow.changes == [] and not follow.active


def test_a_versions_columns_read_as_sparks_simple_string(spark):
    ddl = ("a DECIMAL(10,2) NOT NULL, b STRUCT<id: INT, Zone: STRING> COMMENT 'x', "
           "c ARRAY<BIGINT>, d MAP<STRING, ARRAY<SMALLINT>>, e TINYINT, f BOOLEAN, g DATE, "
           "h TIMESTAMP, i FLOAT, j LONG, k DEC, l REAL, m STRING, n DOUBLE")
    version = TopicSchema("t", 1, ddl, "reject", "backward", 0, 0)
    assert version.simple_string() == DataType.fromDDL(ddl).simpleString()
