"""Fixtures shared by every test: fresh temp store paths."""

from __future__ import annotations

import os
import sys

import pytest

# Spark's Python workers and the subprocesses tests start run this interpreter,
# which has pyarrow and spark_queue installed.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture
def store_path(tmp_path):
    """A path for a new store file inside the test's own temp directory."""
    return str(tmp_path / "store.sqlite")


@pytest.fixture
def store(store_path):
    from spark_queue.store import Store

    with Store(store_path) as opened:
        yield opened
