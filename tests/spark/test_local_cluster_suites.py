"""The source and sink acceptance tests again, with separate executor JVMs.

One pytest process can hold one SparkContext, so these run in a child pytest
with SPARK_QUEUE_TEST_MASTER=local-cluster[2,1,1024]: the shared session and
every driver a crash test starts then have two executor JVMs, each with its
own Python workers.
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
MASTER = "local-cluster[2,1,1024]"

SUITES = [
    "test_source_stream.py", "test_source_batch.py", "test_sink.py", "test_executor_jvms.py",
]
CRASH_TESTS = [
    # The default read mode (auto); the local[2] suite runs the other modes too.
    "test_source_crash.py::"
    "test_sigkill_the_driver_three_times_then_every_event_is_in_the_parquet_sink_once[auto]",
    "test_sink_crash.py::test_replay_after_a_crash_between_sink_commit_and_checkpoint_is_skipped",
    "test_sink_crash.py::test_rate_to_sqliteq_survives_three_sigkills_exactly_once",
    "test_sink_crash.py::test_sqliteq_to_sqliteq_survives_three_sigkills_exactly_once",
]


def _pytest_on_local_cluster(tmp_path, *args: str, timeout: float) -> int:
    """Run pytest on ``args`` in a child; return how many passed (none may fail or skip)."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "-q", "-p", "no:cacheprovider",
         "--basetemp", str(tmp_path / "inner")],
        capture_output=True, text=True, timeout=timeout, cwd=HERE.parents[1],
        env=dict(os.environ, SPARK_QUEUE_TEST_MASTER=MASTER),
    )
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-3000:]
    assert "failed" not in summary and "skipped" not in summary, summary
    return int(re.search(r"(\d+) passed", summary).group(1))


# The child's own limit is the subprocess timeout; the suite-wide pytest-timeout (600 s)
# must not cut it short first (a loaded machine took longer than 600 s for the crash tests).
@pytest.mark.timeout(1800 + 60)
def test_source_and_sink_acceptance_suites_pass_on_local_cluster(tmp_path):
    passed = _pytest_on_local_cluster(
        tmp_path, *(str(HERE / s) for s in SUITES), "-m", "not slow", timeout=1800
    )
    assert passed >= 60


@pytest.mark.timeout(2400 + 60)
def test_sigkill_acceptance_tests_pass_on_local_cluster(tmp_path):
    """The drivers these tests SIGKILL take their master from SPARK_QUEUE_TEST_MASTER."""
    passed = _pytest_on_local_cluster(
        tmp_path, *(str(HERE / t) for t in CRASH_TESTS), timeout=2400
    )
    assert passed == len(CRASH_TESTS)
