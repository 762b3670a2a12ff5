"""Real Kafka brokers for the session: scripts/kafka-broker on free ports in temp dirs.

A Kafka 4.1 broker is started at the first test that asks for ``kafka_bootstrap``,
listening with SASL/PLAIN too (``kafka_sasl``); the round-trip tests also run on a Kafka
3.7 broker (``any_kafka``: the oldest release supported), started at its first use. Each
is stopped at the end of the session whatever happens (a clean SIGTERM, then SIGKILL of
its process group). Without Java or Maven, or without confluent-kafka, the tests that
need them skip saying why; CI has all three. SPARK_QUEUE_TEST_KAFKA=HOST:PORT uses a
4.1-compatible broker already running instead (a developer's), and leaves it running.
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


def _free_ports(count: int = 3) -> int:
    """A port whose next ``count - 1`` ports are free too (controller PORT+1, SASL PORT+2)."""
    for _ in range(50):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port + count - 1 <= 65535:
            try:
                for offset in range(1, count):
                    with socket.socket() as other:
                        other.bind(("127.0.0.1", port + offset))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no {count} free consecutive ports on 127.0.0.1")


_STARTED: dict = {}  # the directory and port of the 4.1 broker this session started
SASL_USER = "mirror"
SASL_PASSWORD = "sasl-test-password-7f3c"  # the session broker's SASL/PLAIN user


def _needs_broker() -> list[str]:
    pytest.importorskip("confluent_kafka", reason="the kafka extra (confluent-kafka) is not "
                        "installed: pip install 'spark-queue[kafka]'")
    return [tool for tool in ("java", "mvn") if shutil.which(tool) is None]


def _started_broker(tmp_path_factory, kafka: str, users: pathlib.Path | None):
    """Start scripts/kafka-broker (Kafka ``kafka``) on free ports; yields (dir, port) and
    stops it whatever happens."""
    missing = _needs_broker()
    if missing:
        pytest.skip(f"no Kafka broker: scripts/kafka-broker needs {' and '.join(missing)} "
                    "(Java 17+, Maven) on the PATH")
    command = [sys.executable, str(BROKER_SCRIPT)]
    extra = ["--kafka", kafka, *(["--sasl-users", str(users)] if users else [])]
    attempts = 0
    while attempts < 3:
        attempts += 1
        # A free port can be taken between the probe and the broker's bind (the machine is
        # shared): a start that fails is tried again on another port, in a fresh directory.
        directory = tmp_path_factory.mktemp(f"kafka-broker-{kafka}")
        port = _free_ports()
        started = subprocess.run(
            [*command, "start", "--dir", str(directory), "--port", str(port),
             "--lifetime-min", "60", "--timeout", "180", *extra],
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
        yield directory, port
    finally:
        subprocess.run([*command, "stop", "--dir", str(directory), "--timeout", "30"],
                       capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory):
    """The session's Kafka 4.1 broker (with a SASL/PLAIN listener at PORT+2)."""
    pytest.importorskip("confluent_kafka", reason="the kafka extra (confluent-kafka) is not "
                        "installed: pip install 'spark-queue[kafka]'")
    external = os.environ.get("SPARK_QUEUE_TEST_KAFKA")
    if external:
        yield external
        return
    users = tmp_path_factory.mktemp("kafka-users") / "users"
    users.write_text(f"{SASL_USER}={SASL_PASSWORD}\n")
    os.chmod(users, 0o600)
    for directory, port in _started_broker(tmp_path_factory, "4", users):
        _STARTED.update(directory=directory, port=port, users=users)
        try:
            yield f"127.0.0.1:{port}"
        finally:
            _STARTED.clear()


@pytest.fixture(scope="session")
def kafka3_bootstrap(tmp_path_factory):
    """A Kafka 3.7 broker for the session: the oldest release the Kafka commands support."""
    for _, port in _started_broker(tmp_path_factory, "3", None):
        yield f"127.0.0.1:{port}"


@pytest.fixture(params=["4.1", "3.7"])
def any_kafka(request):
    """Settings for each supported broker release in turn (the round-trip tests)."""
    from spark_queue.kafka.client_config import KafkaSettings

    name = "kafka_bootstrap" if request.param == "4.1" else "kafka3_bootstrap"
    return KafkaSettings(request.getfixturevalue(name), timeout_s=20)


@pytest.fixture
def kafka_sasl(kafka_bootstrap):
    """The session broker's SASL_PLAINTEXT/PLAIN listener: (bootstrap, user, password)."""
    if not _STARTED:
        pytest.skip("SPARK_QUEUE_TEST_KAFKA names a broker this session did not start")
    return f"127.0.0.1:{_STARTED['port'] + 2}", SASL_USER, SASL_PASSWORD


@pytest.fixture
def kafka(kafka_bootstrap):
    """Settings for the session's broker."""
    from spark_queue.kafka.client_config import KafkaSettings

    return KafkaSettings(kafka_bootstrap, timeout_s=20)


@pytest.fixture
def fake_kafka(monkeypatch):
    """Every export in the test talks to one in-memory Kafka (tests/kafka/fake_link.py)."""
    from spark_queue.kafka import export
    from tests.kafka.fake_link import FakeKafka

    cluster = FakeKafka()
    monkeypatch.setattr(export, "KafkaLink", cluster.link)
    return cluster


@pytest.fixture
def prefix():
    """A Kafka topic prefix of this test's own: tests never see each other's topics."""
    return f"t{uuid.uuid4().hex[:10]}."


class BrokerControl:
    """Stop and start the session's broker on the same port and data (topics and producer
    state survive), each a clean stop or a start that returns once the broker is ready."""

    def __init__(self) -> None:
        self.command = [sys.executable, str(BROKER_SCRIPT)]
        self.where = ["--dir", str(_STARTED["directory"])]

    def stop(self) -> None:
        subprocess.run([*self.command, "stop", *self.where, "--timeout", "30"], check=True,
                       capture_output=True, timeout=120)

    def start(self) -> None:
        done = subprocess.run([*self.command, "start", *self.where, "--port",
                               str(_STARTED["port"]), "--sasl-users", str(_STARTED["users"]),
                               "--lifetime-min", "60", "--timeout", "180"],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def broker_control(kafka_bootstrap):
    """The session's broker, to stop and start; skips with a broker the session did not start.
    Whatever the test does, the broker runs again after it."""
    if not _STARTED:
        pytest.skip("SPARK_QUEUE_TEST_KAFKA names a broker this session did not start")
    control = BrokerControl()
    try:
        yield control
    finally:
        with socket.socket() as probe:
            down = probe.connect_ex(("127.0.0.1", _STARTED["port"])) != 0
        if down:
            control.start()


@pytest.fixture
def restart_broker(broker_control):
    """Restart the session's broker (a clean stop, then a start on the same port and data)."""
    return broker_control.restart
