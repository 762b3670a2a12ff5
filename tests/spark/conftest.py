"""The one SparkSession every Spark test shares (local[2], UI off, 2 shuffle partitions)."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("spark_queue-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .getOrCreate()
    )
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
