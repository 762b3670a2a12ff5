"""A sqliteq -> sqliteq pipeline whose executors never open the store.

The source ships rows from the driver (``readPath=driver``) and the sink's
executors only pack rows into commit messages, so this is the shape that
works when executors cannot see the file. In the shared ``local[2]`` session
the executors are threads of the driver's JVM; test_local_cluster_suites.py
reruns this file on the standalone cluster of tests/cluster, where the session
must also show its two executor JVMs (one per worker).
"""

from __future__ import annotations

import json
import re
import time

from spark_queue.store import Store
from tests.end_to_end.source_helpers import copy_topic


def _executor_jvms_of(master: str) -> int:
    """local-cluster[N,cores,memory] starts N executor JVMs; local[...] runs none of its own;
    the standalone cluster of tests/cluster runs one on each of its workers."""
    if master.startswith("spark://"):
        from tests.cluster.standalone import WORKERS

        return WORKERS
    cluster = re.fullmatch(r"local-cluster\[(\d+),\d+,\d+\]", master)
    return int(cluster.group(1)) if cluster else 0


def _executor_jvms(spark) -> int:
    # Block managers: the driver's plus one per executor JVM.
    return spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1


def test_the_session_has_the_executor_jvms_its_master_names(spark):
    expected = _executor_jvms_of(spark.sparkContext.master)
    deadline = time.monotonic() + 120  # executors register after the session starts
    while _executor_jvms(spark) != expected and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _executor_jvms(spark) == expected


def test_driver_shipped_stream_into_a_topic_and_a_batch_into_a_queue(spark, tmp_path, store_path):
    with Store(store_path) as store:
        store.publish_many("in", ({"n": i} for i in range(5000)))
    copy_topic(spark, store_path, store_path, str(tmp_path / "checkpoint"),
               readPath="driver", rowsPerPartition=700, maxRowsPerTrigger=1500)
    (
        spark.range(2000).repartition(4)
        .selectExpr("id", "concat('job-', id) AS idempotency_key",
                    "CAST(id % 3 AS INT) AS priority")
        .write.format("sqliteq").mode("append").option("queue", "jobs").save(store_path)
    )
    typed = (
        spark.read.format("sqliteq").schema("n LONG").option("path", store_path)
        .option("topic", "in").option("readPath", "driver").load()
    )
    assert typed.groupBy().sum("n").first()[0] == sum(range(5000))
    with Store(store_path) as store:
        out = store.read("out")
        assert sorted(int(e.key) for e in out) == list(range(5000))
        assert sorted(json.loads(e.value)["n"] for e in out) == list(range(5000))
        jobs = store.queue("jobs")
        assert jobs.stats().ready == 2000
        assert sorted(j.payload["id"] for j in jobs.claim(2000)) == list(range(2000))
