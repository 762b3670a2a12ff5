"""The source and sink acceptance suites again, with separate executor JVMs.

One pytest process can hold one SparkContext, so this runs the suites in a
child pytest whose shared session uses ``local-cluster[2,1,1024]``: two
executor JVMs, each with its own Python workers.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

HERE = pathlib.Path(__file__).resolve().parent
SUITES = ["test_source_stream.py", "test_source_batch.py", "test_sink.py"]


def test_source_and_sink_acceptance_suites_pass_on_local_cluster(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *(str(HERE / s) for s in SUITES), "-m", "not slow",
         "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "inner")],
        capture_output=True, text=True, timeout=1800, cwd=HERE.parents[1],
        env=dict(os.environ, SPARK_QUEUE_TEST_MASTER="local-cluster[2,1,1024]"),
    )
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-3000:]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    assert passed >= 60 and "failed" not in summary and "skipped" not in summary, summary


CRASH_TESTS = [
    "test_source_processes.py::"
    "test_sigkill_the_driver_three_times_then_every_event_is_in_the_parquet_sink_once",
    "test_sink_crash.py::test_replay_after_a_crash_between_sink_commit_and_checkpoint_is_skipped",
]


def test_sigkill_acceptance_tests_pass_on_local_cluster(tmp_path):
    """The drivers these tests SIGKILL take their master from SPARK_QUEUE_TEST_MASTER."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *(str(HERE / t) for t in CRASH_TESTS),
         "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "inner")],
        capture_output=True, text=True, timeout=2400, cwd=HERE.parents[1],
        env=dict(os.environ, SPARK_QUEUE_TEST_MASTER="local-cluster[2,1,1024]"),
    )
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-3000:]
    assert re.search(rf"\b{len(CRASH_TESTS)} passed", summary), summary
