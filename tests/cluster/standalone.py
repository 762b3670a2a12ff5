"""A Spark standalone cluster whose workers cannot see the driver's disk.

A master and two workers start from the installed pyspark's own
``bin/spark-class``, on 127.0.0.1 only, on free ports. Each worker runs in a
mount namespace of its own (``unshare -m``) in which the driver's disk (one
directory: the test run's basetemp, where every store lives) is an empty
tmpfs: its executors, their Python workers and everything they start see
that directory, but not one file the driver put there, as the worker nodes of
a Databricks, YARN or Kubernetes cluster cannot see the driver node's local
disk. The driver node runs no executor (as on Databricks). A second
directory, ``shared``, stands for cloud storage: every node sees it, and a
file sink's output or a notebook's table goes there.

Needs root (``unshare -m`` and ``mount``) and Linux; :func:`unavailable` says
why not elsewhere. Every process starts in a process group of its own, and
:meth:`StandaloneCluster.stop` kills them all, whatever happened; their logs
stay under ``logs/`` for a failure message.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field

HOST = "127.0.0.1"
WORKERS = 2
# Two cores a worker: the test session takes one on each (spark.cores.max), so a driver
# in another process (a crash test's) gets the other two.
WORKER_CORES = 2
WORKER_MEMORY = "2g"
EXECUTOR_MEMORY = "1g"
START_TIMEOUT_S = 180


def unavailable() -> str | None:
    """Why this machine cannot run the cluster, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return ("the standalone cluster hides the driver's disk with unshare -m: "
                "needs root (CI runs as root)")
    for tool in ("unshare", "mount", "java"):
        if shutil.which(tool) is None:
            return f"the standalone cluster needs {tool!r} on the PATH"
    return None


def _die_with_parent() -> None:
    """SIGKILL this daemon when the process that started it dies, even by SIGKILL (a
    child pytest stopped by its parent runs no finalizer). unshare, sh and spark-class
    each exec the next, so the JVM keeps this process and the setting."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def spark_home() -> pathlib.Path:
    import pyspark

    return pathlib.Path(pyspark.__file__).resolve().parent


@dataclass
class Daemon:
    name: str
    process: subprocess.Popen
    log: pathlib.Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return f"({self.log} unreadable)"
        return f"--- {self.name} ({self.log}) ---\n" + "\n".join(text[-lines:])


@dataclass
class StandaloneCluster:
    """The running cluster: ``url`` for ``SparkSession.builder.master``."""

    hidden: pathlib.Path
    shared: pathlib.Path
    logs: pathlib.Path
    master_port: int = field(default_factory=free_port)
    master_ui_port: int = field(default_factory=free_port)
    master: Daemon | None = None
    workers: list[Daemon] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"

    def start(self) -> StandaloneCluster:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.shared.mkdir(parents=True, exist_ok=True)
        try:
            self.master = self._spawn("master", [
                "org.apache.spark.deploy.master.Master", "--host", HOST,
                "--port", str(self.master_port), "--webui-port", str(self.master_ui_port),
            ])
            for index in range(WORKERS):
                self.start_worker(index)
            self.wait_for_workers(WORKERS)
        except BaseException:
            self.stop()
            raise
        return self

    def start_worker(self, index: int) -> Daemon:
        """Worker ``index`` in a mount namespace of its own, with :attr:`hidden` empty there."""
        work_dir = self.logs.parent / f"worker-{index}"
        work_dir.mkdir(parents=True, exist_ok=True)
        worker = self._spawn(f"worker-{index}", [
            "org.apache.spark.deploy.worker.Worker", "--host", HOST,
            "--port", str(free_port()), "--webui-port", str(free_port()),
            "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY,
            "--work-dir", str(work_dir), self.url,
        ], hide=True)
        if index < len(self.workers):
            self.workers[index] = worker
        else:
            self.workers.append(worker)
        return worker

    def _spawn(self, name: str, args: list[str], hide: bool = False) -> Daemon:
        command = [str(spark_home() / "bin" / "spark-class"), *args]
        if hide:
            # Private propagation: the tmpfs stays inside this namespace. exec keeps the
            # worker the group leader's image, so killpg reaches its executors too.
            inner = (f"mount -t tmpfs -o size=16m sq-hidden {shlex.quote(str(self.hidden))} && "
                     f"exec {shlex.join(command)}")
            command = ["unshare", "-m", "--propagation", "private", "sh", "-c", inner]
        log = self.logs / f"{name}.log"
        env = dict(os.environ, SPARK_LOCAL_IP=HOST, SPARK_NO_DAEMONIZE="1",
                   SPARK_LOG_DIR=str(self.logs))
        with open(log, "w") as sink:
            process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, env=env,
                                       start_new_session=True, preexec_fn=_die_with_parent)
        return Daemon(name, process, log)

    def alive_workers(self) -> int:
        """ALIVE workers as the master's JSON page lists them (0 while it is not up)."""
        try:
            with urllib.request.urlopen(
                    f"http://{HOST}:{self.master_ui_port}/json/", timeout=5) as answer:
                state = json.load(answer)
        except (OSError, ValueError):
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def wait_for_workers(self, count: int, timeout_s: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while self.alive_workers() < count:
            dead = [d for d in [self.master, *self.workers] if d is not None and not d.alive()]
            if dead or time.monotonic() > deadline:
                why = (f"{', '.join(d.name for d in dead)} exited" if dead
                       else f"not {count} ALIVE workers within {timeout_s:.0f} s")
                raise RuntimeError(f"standalone cluster did not start: {why}\n" + self.logs_tail())
            time.sleep(0.2)

    def logs_tail(self) -> str:
        return "\n".join(d.tail() for d in [self.master, *self.workers] if d is not None)

    def stop(self) -> None:
        daemons = [d for d in [*self.workers, self.master] if d is not None]
        for daemon in daemons:
            daemon.kill(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for daemon in daemons:
            with contextlib.suppress(subprocess.TimeoutExpired):
                daemon.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            daemon.kill(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                daemon.process.wait(timeout=10)


def session_builder(cluster: StandaloneCluster):
    """A builder for a driver on this machine whose executors are the cluster's two."""
    return session_builder_for_url(cluster.url)


def session_builder_for_url(url: str):
    """:func:`session_builder` for a driver in another process, which knows the URL only."""
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master(url)
        .config("spark.driver.host", HOST)
        .config("spark.driver.bindAddress", HOST)
        .config("spark.executor.memory", EXECUTOR_MEMORY)
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", str(WORKERS))
        # Both executors before the first job, so tasks spread over both workers.
        .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
        .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s")
    )
