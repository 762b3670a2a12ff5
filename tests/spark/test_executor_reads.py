"""spark_queue.spark.read_paths asks Spark's executors which read path their Python
workers run (a fallback there warns only in the executor's log)."""

from __future__ import annotations

import socket

import pytest

from spark_queue.spark import read_paths
from spark_queue.store import read_path


@pytest.mark.slow
def test_read_paths_reports_each_executor_hosts_read_path_and_why(spark):
    paths = read_paths(spark, tasks=2)
    assert list(paths) == [socket.gethostname()]  # local[2]: the executors are this host
    [executors] = paths.values()
    assert executors == read_path()  # the same install on the same machine
    assert executors.compiled, executors.reason
