"""Spark drivers in processes of their own.

One process holds one SparkContext, so a test that needs another JVM (a
SIGKILL crash, local-cluster executors, a Spark Connect server) runs its
driver as a script in a subprocess. Each driver starts a new session, so
killing its process group takes the JVM and every Python worker with it.
A driver reports what it saw as one ``RESULT <json>`` line on stdout.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass

RESULT_PREFIX = "RESULT "


def driver_env(**overrides: str) -> dict[str, str]:
    """This environment, with Spark's Python workers on this interpreter (it has spark_queue)."""
    return dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        **overrides,
    )


def write_script(directory: pathlib.Path, source: str, name: str = "driver.py") -> pathlib.Path:
    script = directory / name
    script.write_text(textwrap.dedent(source))
    return script


def start(
    *argv: str | os.PathLike,
    env: dict[str, str] | None = None,
    log: pathlib.Path | None = None,
    **popen,
) -> subprocess.Popen:
    """``python *argv`` in a new session; stdout and stderr go to ``log`` if given,
    otherwise ``popen`` (stdout, stderr, text) goes to Popen."""
    if log is not None:
        with open(log, "w") as sink:
            return start(*argv, env=env, stdout=sink, stderr=subprocess.STDOUT)
    return subprocess.Popen(
        [sys.executable, *map(str, argv)],
        env=env or driver_env(),
        start_new_session=True,
        **popen,
    )


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the driver's process group and wait until its JVM and workers are gone too."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    raise AssertionError("driver process group survived SIGKILL")


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str

    def tail(self) -> str:
        return self.stdout[-3000:] + self.stderr[-4000:]

    def result(self) -> dict:
        """The driver's RESULT; fails the test, with the driver's output, if it did not succeed."""
        lines = [line for line in self.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
        assert self.returncode == 0 and lines, self.tail()
        return json.loads(lines[-1][len(RESULT_PREFIX) :])


def run(
    script: pathlib.Path,
    *args: str | os.PathLike,
    timeout: float = 600,
    env: dict[str, str] | None = None,
) -> Finished:
    """Run a driver script to its end; a driver still running at ``timeout`` is killed."""
    proc = start(script, *args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    return Finished(proc.returncode, stdout, stderr)
