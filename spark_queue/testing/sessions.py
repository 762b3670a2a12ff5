"""The SparkSessions the pytest plugin hands tests: a local Classic one, or a Spark Connect one
(a server the plugin starts in a subprocess, or the ``sc://`` URL a user names).

pyspark is imported inside the functions: the plugin imports this module for every pytest
run, and a run that never asks for a session must not load Spark.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import Any

#: Small and quiet, as tests want it: two cores, two shuffle partitions, no UI.
TEST_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
}
MASTER = "local[2]"
CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"


def classic_session() -> Any:
    """The process's Classic session: the active one (a project's own fixture may have
    made it), or a new local one."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from spark_queue.connector import compat
    from spark_queue.spark import python_env

    builder = SparkSession.builder.master(MASTER).appName("sqliteq-tests")
    for key, value in {**TEST_CONF, compat.CHECKPOINT_MANAGER_CONF:
                       compat.FILE_SYSTEM_CHECKPOINT_MANAGER}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    # One JVM runs every test's queries: settle the source's shared environment before
    # any starts (spark/python_env.py).
    python_env.settle_source_env(session)
    return session


def connect_session(url: str) -> Any:
    """A Spark Connect client session on ``url`` (``sc://host:port``). Connect's own
    builder: pyspark's shared one refuses a remote session in a process that runs a Classic
    session too (SESSION_ALREADY_EXIST), which ``sqliteq_both`` needs."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    return ConnectSession.builder.remote(url).getOrCreate()


class ConnectServer:
    """A local Spark Connect server in a subprocess of its own (its own JVM: a Classic
    session in this process cannot also serve Connect), stopped by :meth:`stop`."""

    def __init__(self) -> None:
        self.port = free_port()
        env = dict(os.environ, PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable))
        env.pop("SPARK_REMOTE", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "spark_queue.testing.connect_server", str(self.port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        assert self.process.stdout is not None
        # The server prints one line once it serves (or exits): a blocking read, no timer.
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            self.stop()
            raise RuntimeError(
                f"sqliteq pytest plugin: the local Spark Connect server did not start (exit "
                f"{self.process.returncode}, said {line!r}); its log is above. Pass "
                "--sqliteq-remote sc://host:port to use a running one.")

    @property
    def url(self) -> str:
        return f"sc://localhost:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()  # the server stops Spark and exits on end of input
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return int(probe.getsockname()[1])


def serve(port: int) -> None:
    """Run a Spark Connect server on ``port`` until standard input closes."""
    from pyspark.sql import SparkSession

    from spark_queue.connector import compat
    from spark_queue.spark import python_env

    builder = (SparkSession.builder.master(MASTER).appName("sqliteq-connect-tests")
               .config("spark.plugins", CONNECT_PLUGIN)
               .config("spark.connect.grpc.binding.port", str(port)))
    for key, value in {**TEST_CONF, compat.CHECKPOINT_MANAGER_CONF:
                       compat.FILE_SYSTEM_CHECKPOINT_MANAGER}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    python_env.settle_source_env(session)  # the clients' queries run in this JVM
    print("ready", flush=True)
    try:
        sys.stdin.read()
    finally:
        session.stop()
