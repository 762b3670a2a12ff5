"""The acceptance tests again, in child pytests with other Spark masters.

One pytest process can hold one SparkContext, so these run in child pytests:

- ``standalone``: the source and sink acceptance suites, the notebooks and
  tests/cluster on a standalone cluster whose workers cannot see the driver's
  disk (tests/cluster/standalone.py), with default options: the driver ships
  every row, executors run in JVMs of their own on other "machines".
- ``local-cluster[2,1,1024]``: the SIGKILL tests marked for it, with executor
  JVMs on the driver's machine that open the file themselves.

The standalone child replaced a local-cluster run of the same acceptance
suites (about three minutes): separate executor JVMs are what both showed, and
the standalone cluster shows them where executors cannot open the file; the
executor path itself runs in the main suite on local[2].

The children start when collection ends (tests/conftest.py calls
:func:`start_children`), one after the other in a background thread, while
the rest of the suite runs in this process: Spark work that would otherwise
wait its turn, on a machine a single Spark test keeps only about two thirds
busy. Each test here waits for its child's result.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

import pytest

pytestmark = pytest.mark.slow

HERE = pathlib.Path(__file__).resolve().parent
MASTER = "local-cluster[2,1,1024]"

SUITES = [
    "test_source_stream.py", "test_source_batch.py", "test_sink.py", "test_executor_jvms.py",
]
# The SIGKILL tests marked ``@pytest.mark.master("local-cluster")``: the default read mode
# (auto) under a driver SIGKILL, and sqliteq -> sqliteq (source and sink) under three.
CRASH_FILES = ["test_source_crash.py", "test_sink_crash.py"]
LOCAL_CLUSTER_CRASH_TESTS = 2
# What the standalone child must pass at least: the acceptance suites, the
# notebooks and tests/cluster (a test that quietly stops being collected fails this).
# 98 since the sink's refusals at start moved to test_sink_start.py (they fail before any
# executor runs, so local[2] shows them as well as a cluster would).
STANDALONE_TESTS = 98


class Child:
    """A child pytest under another master, run in the background; ``passed()`` waits for it."""

    def __init__(self, args: list[str], timeout: float, master: str = MASTER):
        self.args, self.timeout, self.master = args, timeout, master
        self.done = threading.Event()
        self.outcome: tuple[int, str, str] | None = None
        self.process: subprocess.Popen | None = None

    def run(self) -> None:
        basetemp = tempfile.mkdtemp(prefix="spark-queue-local-cluster-")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pytest", *self.args, "-q", "-p", "no:cacheprovider",
                 "--basetemp", basetemp],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                cwd=HERE.parents[1], env=dict(os.environ, SPARK_QUEUE_TEST_MASTER=self.master),
                start_new_session=True,
            )
            try:
                out, err = self.process.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                stop(self.process)
                out, err = self.process.communicate()
                err += f"\nthe child pytest ran past {self.timeout:.0f} s and was stopped"
            self.outcome = (self.process.returncode, out, err)
        finally:
            shutil.rmtree(basetemp, ignore_errors=True)
            self.done.set()

    def passed(self) -> int:
        """How many tests passed in the child (none may fail or skip)."""
        self.done.wait()
        assert self.outcome is not None, "the child pytest never ran"
        code, out, err = self.outcome
        summary = out.strip().splitlines()[-1] if out.strip() else ""
        assert code == 0, out[-5000:] + err[-3000:]
        assert "failed" not in summary and "skipped" not in summary, summary
        return int(re.search(r"(\d+) passed", summary).group(1))

    def skipped_because(self) -> str | None:
        """The one skip reason when the child skipped everything (no cluster here), else None."""
        self.done.wait()
        assert self.outcome is not None, "the child pytest never ran"
        code, out, _ = self.outcome
        summary = out.strip().splitlines()[-1] if out.strip() else ""
        if code == 0 and "passed" not in summary and "skipped" in summary:
            reasons = re.findall(r"SKIPPED \[\d+\] [^:]+:\d+: (.*)", out)
            return reasons[0] if reasons else summary
        return None


def stop(process: subprocess.Popen) -> None:
    """SIGKILL the child and every driver and JVM it started (its own process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


# The same acceptance suites, the notebooks and tests/cluster on a standalone cluster whose
# workers cannot see the driver's disk (tests/cluster/standalone.py), with default options.
STANDALONE = [*(str(HERE / s) for s in SUITES), str(HERE.parent / "smoke" / "test_notebooks.py"),
              str(HERE.parent / "cluster")]

CHILDREN = {
    # First: the longest, and the one that needs the machine's memory most.
    "test_default_options_pass_on_a_cluster_whose_workers_cannot_see_the_drivers_disk": Child(
        [*STANDALONE, "-rs"], timeout=2400, master="standalone"),
    "test_sigkill_acceptance_tests_pass_on_local_cluster": Child(
        [str(HERE / t) for t in CRASH_FILES], timeout=2400),
}


def start_children(selected: list[str]) -> list[Child]:
    """Start the children of the ``selected`` tests here, one after the other in a
    background thread; returns them, for the caller to stop at the session's end."""
    children = [CHILDREN[name] for name in CHILDREN if name in selected]
    if not children:
        return []

    def run_all() -> None:
        for child in children:
            child.run()

    threading.Thread(target=run_all, name="local-cluster children", daemon=True).start()
    return children


def stop_children(children: list[Child]) -> None:
    """At the session's end: stop a child still running (the session failed or was
    interrupted before its test waited for it)."""
    for child in children:
        if child.process is not None and child.process.poll() is None:
            stop(child.process)


# The children's own limits are their timeouts; the suite-wide pytest-timeout (600 s)
# must not cut the wait short first (a loaded machine took longer than 600 s for the
# crash tests), and a child waits for the ones before it to finish first.


@pytest.mark.timeout(2400 + 2400 + 60)
def test_sigkill_acceptance_tests_pass_on_local_cluster():
    """The drivers these tests SIGKILL take their master from SPARK_QUEUE_TEST_MASTER."""
    assert CHILDREN[
        "test_sigkill_acceptance_tests_pass_on_local_cluster"].passed() == (
        LOCAL_CLUSTER_CRASH_TESTS)


@pytest.mark.timeout(2400 + 60)
def test_default_options_pass_on_a_cluster_whose_workers_cannot_see_the_drivers_disk():
    """tests/cluster/standalone.py: skipped (with the child's reason) where it cannot run."""
    child = CHILDREN[
        "test_default_options_pass_on_a_cluster_whose_workers_cannot_see_the_drivers_disk"]
    reason = child.skipped_because()
    if reason is not None:
        pytest.skip(reason)
    assert child.passed() >= STANDALONE_TESTS
