"""A real Kafka broker for the session: scripts/kafka-broker on a free port in a temp dir.

Started at the first test that asks for ``kafka_bootstrap`` and stopped at the end of
the session whatever happens (a clean SIGTERM, then SIGKILL of its process group).
Without Java or Maven, or without confluent-kafka, the tests that need it skip saying
why; CI has all three. SPARK_QUEUE_TEST_KAFKA=HOST:PORT uses a broker already running
instead (a developer's), and leaves it running.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import socket
import subprocess
import sys
import uuid

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BROKER_SCRIPT = ROOT / "scripts" / "kafka-broker"


def _free_port_pair() -> int:
    """A port whose next port is free too (the controller takes PORT+1)."""
    for _ in range(50):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port < 65535:
            with socket.socket() as other:
                try:
                    other.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError("no two free consecutive ports on 127.0.0.1")


_STARTED: dict = {}  # the directory and port of the broker this session started


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory):
    pytest.importorskip("confluent_kafka", reason="the kafka extra (confluent-kafka) is not "
                        "installed: pip install 'spark-queue[kafka]'")
    external = os.environ.get("SPARK_QUEUE_TEST_KAFKA")
    if external:
        yield external
        return
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"no Kafka broker: scripts/kafka-broker needs {' and '.join(missing)} "
                    "(Java 17+, Maven) on the PATH")
    command = [sys.executable, str(BROKER_SCRIPT)]
    attempts = 0
    while attempts < 3:
        attempts += 1
        # A free port can be taken between the probe and the broker's bind (the machine is
        # shared): a start that fails is tried again on another port, in a fresh directory.
        directory = tmp_path_factory.mktemp("kafka-broker")
        port = _free_port_pair()
        started = subprocess.run(
            [*command, "start", "--dir", str(directory), "--port", str(port),
             "--lifetime-min", "60", "--timeout", "180"],
            capture_output=True, text=True, timeout=1200,
        )
        if started.returncode == 0 or "mvn" in started.stderr or "java" in started.stderr:
            break
        subprocess.run([*command, "stop", "--dir", str(directory)], capture_output=True,
                       timeout=120)
    try:
        if started.returncode != 0:
            log = directory / "logs" / "server.log"
            tail = log.read_text()[-3000:] if log.exists() else ""
            pytest.fail(f"scripts/kafka-broker start failed ({attempts} attempts):\n"
                        f"{started.stdout}{started.stderr}\n{tail}")
        _STARTED.update(directory=directory, port=port)
        yield f"127.0.0.1:{port}"
    finally:
        _STARTED.clear()
        subprocess.run([*command, "stop", "--dir", str(directory), "--timeout", "30"],
                       capture_output=True, timeout=120)


@pytest.fixture
def kafka(kafka_bootstrap):
    """Settings for the session's broker."""
    from spark_queue.kafka.client import KafkaSettings

    return KafkaSettings(kafka_bootstrap, timeout_s=20)


@pytest.fixture
def prefix():
    """A Kafka topic prefix of this test's own: tests never see each other's topics."""
    return f"t{uuid.uuid4().hex[:10]}."


@pytest.fixture
def restart_broker(kafka_bootstrap):
    """Restart the session's broker (a clean stop, then a start on the same port and data:
    topics and producer state survive). Skips with a broker the session did not start."""
    if not _STARTED:
        pytest.skip("SPARK_QUEUE_TEST_KAFKA names a broker this session did not start")
    command = [sys.executable, str(BROKER_SCRIPT)]
    where = ["--dir", str(_STARTED["directory"])]

    def restart() -> None:
        subprocess.run([*command, "stop", *where, "--timeout", "30"], check=True,
                       capture_output=True, timeout=120)
        done = subprocess.run([*command, "start", *where, "--port", str(_STARTED["port"]),
                               "--lifetime-min", "60", "--timeout", "180"],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr

    return restart
