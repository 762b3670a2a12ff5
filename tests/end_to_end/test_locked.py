"""A store locked by another process's write transaction: the sink waits its busy
timeout and fails with a named error, readers go on, nothing is corrupted."""

from __future__ import annotations

import pytest

from spark_queue.store import Store


def test_sink_waits_for_the_lock_then_names_it_and_reader_is_not_blocked(spark, store_path):
    with Store(store_path) as holder:
        holder.publish_many("in", range(100))
        rows = spark.range(10).selectExpr("CAST(id AS STRING) AS value")
        with holder.write():
            holder.conn.execute("UPDATE sq_topics SET created_ms = created_ms")
            with pytest.raises(Exception, match="locked by another writer"):
                (rows.write.format("sqliteq").mode("append").option("topic", "out")
                     .option("busyTimeoutMs", "1000").save(store_path))
            # WAL readers never wait for the writer.
            read = (spark.read.format("sqliteq").option("path", store_path).option("topic", "in")
                    .load())
            assert read.count() == 100
        rows.write.format("sqliteq").mode("append").option("topic", "out").save(store_path)
        assert sorted(int(e.value) for e in holder.read("out")) == list(range(10))
        assert holder.check().ok
