"""Named child processes of a long benchmark run, each SIGKILLed and started again by name.

Each child's output is appended to ``NAME.log`` in the run's work directory, kept when the
run fails, so a kill's aftermath (a restart from a checkpoint, a recovery) can be read
there. Used by :mod:`benchmarks.unattended` and :mod:`benchmarks.schema_chaos`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence


def in_work_dir(prefix: str, body: Callable[[str], int]) -> int:
    """``body(work)`` in a new temporary directory, removed after a run that returned 0 and
    kept (and named on stderr) after any other, with the children's logs in it."""
    work = tempfile.mkdtemp(prefix=prefix)
    try:
        code = body(work)
    except BaseException:
        print(f"kept {work}: the processes' logs are there", file=sys.stderr)
        raise
    if code != 0:
        print(f"kept {work}: the processes' logs are there", file=sys.stderr)
        return code
    shutil.rmtree(work, ignore_errors=True)
    return code


class Children:
    """``commands`` (name -> argv), started at once."""

    def __init__(self, work: str, commands: Mapping[str, Sequence[str]]) -> None:
        self.work = work
        self.commands = dict(commands)
        self.procs = {name: self._start(name) for name in self.commands}

    def _start(self, name: str) -> subprocess.Popen:
        with open(self.log(name), "ab") as log:
            return subprocess.Popen(self.commands[name], stdout=log, stderr=subprocess.STDOUT)

    def log(self, name: str) -> str:
        return os.path.join(self.work, f"{name}.log")

    def exited(self) -> dict[str, int]:
        """The children that exited by themselves since started: name -> return code."""
        return {name: proc.returncode for name, proc in self.procs.items()
                if proc.poll() is not None}

    def restart(self, name: str) -> None:
        """Start ``name`` again (after it exited)."""
        self.procs[name] = self._start(name)

    def kill(self, name: str, restart: bool = True) -> None:
        """SIGKILL ``name``, wait for it, and (unless told not to) start it again."""
        os.kill(self.procs[name].pid, signal.SIGKILL)
        self.procs[name].wait()
        if restart:
            self.restart(name)

    def wait(self, name: str, timeout_s: float) -> int:
        return self.procs[name].wait(timeout=timeout_s)

    def close(self) -> None:
        """Kill whatever still runs (a failed run's cleanup)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
