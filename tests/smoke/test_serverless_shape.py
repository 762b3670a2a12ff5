"""The serverless shape: notebook 01, the stream-to-Delta notebook and a queue sink
through Spark Connect with ``availableNow`` only, from the installed wheel, the store on
the driver's local disk (tests/smoke/serverless_client.py runs it; a Connect session
cannot share the test session's JVM, so it has a process of its own). The matrix runs it
on pyspark 4.2.0 (with Delta) and 4.3.0, on Python 3.13 and Java 21 (matrix.py,
ONLY_ON_PY313); it needs Spark Connect's client (pyspark 4.1+ with ``[connect]``)."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

from spark_queue.store import Store

CLIENT = pathlib.Path(__file__).resolve().parent / "serverless_client.py"
TIMEOUT_S = 900

pytestmark = pytest.mark.slow


def test_the_notebooks_and_a_queue_sink_run_through_spark_connect_with_available_now_only(
        tmp_path):
    pytest.importorskip("grpc", reason="no Spark Connect client (pyspark[connect]) here")
    work_dir, tables_dir = tmp_path / "local_disk", tmp_path / "tables"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    done = subprocess.run([sys.executable, str(CLIENT), str(work_dir), str(tables_dir)],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-4000:] + done.stderr[-8000:]
    result = json.loads(lines[-1].removeprefix("RESULT "))
    assert result["sensor_rows"] == result["sensors_published"] == 8000
    # Delta where the session has it (4.2 here), else Parquet: table_format must ask
    # a Connect session for real (its reader resolves lazily).
    has_delta = importlib.util.find_spec("delta") is not None
    assert result["table_format"] == ("delta" if has_delta else "parquet"), result
    assert result["compiled_read"], result  # the executors answered
    if os.environ.get("SPARK_QUEUE_SMOKE_FROM_WHEEL") == "1":  # the wheel carries the build
        assert all(result["compiled_read"].values()), result
    with Store(result["store"], readonly=True) as store:
        orders = store.topic("orders").latest_offset()
        assert orders > 0
        assert store.queue(result["queue"]).stats().ready == orders
