"""README command 1's job, ``sqliteq demo``, runs to its summary on every supported pyspark.

The matrix runs this file from the installed wheel (Delta where delta-spark is
installed, Parquet where it is not), from a directory outside the checkout.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest


@pytest.mark.slow
@pytest.mark.timeout(900 + 60)
def test_the_demo_runs_to_its_summary_with_every_event_in_the_table_once(tmp_path):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("SPARK_QUEUE_CONF_DIR", None)
    result = subprocess.run(
        [sys.executable, "-m", "spark_queue", "demo", "--events", "2000"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    summary = dict(re.findall(r"^(\w+)\s{2,}(.+)$", output, re.M))
    assert summary["events_in_topic"] == summary["rows_in_bronze"] == "2000", output[-3000:]
    assert summary["distinct_offsets_in_bronze"] == "2000"
    expected = "delta" if importlib.util.find_spec("delta") else "parquet"
    assert summary["bronze_table"].split()[0] == expected
    assert os.path.isfile(tmp_path / "spark_queue_demo" / "demo.sqlite")
