"""The one SparkSession every Spark test shares: UI off, 2 shuffle partitions, Delta on.

The master is local[2] unless SPARK_QUEUE_TEST_MASTER names another.
"""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    """With Delta, as the notebooks and the demo use it; no register() call, so the
    format is found by Spark's lookup of the installed pyspark_sqliteq module."""
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # tests/spark/test_local_cluster_suites.py reruns the source and sink
    # acceptance suites with SPARK_QUEUE_TEST_MASTER=local-cluster[2,1,1024].
    master = os.environ.get("SPARK_QUEUE_TEST_MASTER", "local[2]")
    builder = (
        SparkSession.builder.master(master)
        .config("spark.executor.memory", "1g")
        .appName("spark_queue-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog",
                "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.databricks.delta.snapshotPartitions", "2")
    )
    session = configure_spark_with_delta_pip(builder).getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.fixture(autouse=True)
def _no_leaked_queries(request):
    """Fail a test that leaves a streaming query running."""
    yield
    if "spark" in request.fixturenames:
        session = request.getfixturevalue("spark")
        active = session.streams.active
        for query in active:
            query.stop()
        assert not active, f"test left {len(active)} streaming queries running"
