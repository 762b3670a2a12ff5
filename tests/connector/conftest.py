"""The connector's classes called as Spark calls them, without Spark.

pytest is no Spark planning process: there is no driver JVM above it for
``readPath=auto`` to read a master from (source/placement.py), so the
planner would ship every range. These tests stand for the ``local[2]``
driver of the Spark tests, where executors open the file themselves; the
cluster answer has tests of its own (test_placement.py, tests/cluster).
"""

from __future__ import annotations

import pytest

from spark_queue.connector.source import partition_planner


@pytest.fixture(autouse=True)
def _a_local_master(monkeypatch):
    monkeypatch.setattr(partition_planner, "executors_share_driver_disk", lambda: True)
