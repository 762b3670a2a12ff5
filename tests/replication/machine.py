"""A machine lost at once, for the replication tests: SIGKILL to every process a test
started and to every process they started, Litestream included (it runs in a session of
its own, so a process group's SIGKILL alone leaves it to ship its last changes on the
SIGTERM its parent's death sends)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time


def _children() -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        found.setdefault(parent, []).append(int(name))
    return found


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``."""
    children, found, todo = _children(), [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def lose_machine(procs: list[subprocess.Popen]) -> None:
    """SIGKILL ``procs``, their process groups and all their descendants at once, and wait
    until every one of them is gone."""
    below = [pid for proc in procs for pid in descendants(proc.pid)]
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    for pid in below:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for proc in procs:
        proc.wait(timeout=60)
    deadline = time.monotonic() + 60
    for pid in below:  # reparented to init, which reaps them
        while os.path.exists(f"/proc/{pid}") and _state(pid) != "Z":
            assert time.monotonic() < deadline, f"process {pid} survived SIGKILL"
            time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return "Z"
