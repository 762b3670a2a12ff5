"""The one place that loads the Kafka client (confluent-kafka) and turns its errors into ours.

confluent-kafka is the ``kafka`` extra: nothing imports it at module level, so
``import spark_queue.kafka`` works without it and each command that needs it says
which extra to install. Every wait on the broker is bounded by
:attr:`KafkaSettings.timeout_s`, and a broker that does not answer within it is a
:class:`~spark_queue.errors.KafkaUnavailableError` naming the servers and the timeout.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from spark_queue.errors import (
    KafkaClientMissingError,
    KafkaError,
    KafkaTopicError,
    KafkaUnavailableError,
    OptionError,
)
from spark_queue.kafka.client_config import redact

INSTALL_HINT = "pip install 'spark-queue[kafka]' (in a checkout: pip install -e '.[kafka]')"
DEFAULT_TIMEOUT_S = 10.0
# A record's delivery may wait longer than an answer to a request: a broker busy on a loaded
# machine acknowledges late, and a record that times out ends the export (a rerun resumes).
MIN_DELIVERY_TIMEOUT_S = 60.0

# Topics an export creates keep every event, with the store's timestamps: Kafka's
# defaults would delete events older than 7 days at once (retention.ms) and refuse
# timestamps more than an hour ahead of the broker's clock.
EXPORT_TOPIC_CONFIG = {
    "retention.ms": "-1",
    "message.timestamp.type": "CreateTime",
    "message.timestamp.before.max.ms": str(2**63 - 1),
    "message.timestamp.after.max.ms": str(2**63 - 1),
}


class _QuietLog:
    """librdkafka's own log lines (a refused connection, a retry) as INFO records of
    ``spark_queue.kafka.librdkafka``: seen with ``-v``, never beside a one-line error."""

    def log(self, level: int, fmt: str, *args: Any) -> None:
        logging.getLogger("spark_queue.kafka.librdkafka").info(fmt, *args)


_LIBRDKAFKA_LOG = _QuietLog()
# The last error each bootstrap's clients reported (librdkafka's error_cb) and when: a broker
# that refuses the credentials looks like one that does not answer, save for this text.
_CLIENT_ERRORS: dict[str, tuple[float, str]] = {}


def _error_recorder(bootstrap: str) -> Any:
    def record(error: Any) -> None:
        _CLIENT_ERRORS[bootstrap] = (time.monotonic(), error.str())

    return record


def confluent() -> ModuleType:
    """The ``confluent_kafka`` module; KafkaClientMissingError names the extra if absent."""
    try:
        import confluent_kafka
    except ImportError as exc:
        raise KafkaClientMissingError(
            f"the Kafka commands need the Kafka client confluent-kafka, which is not "
            f"installed here: {INSTALL_HINT}"
        ) from exc
    return confluent_kafka


@dataclass(frozen=True, repr=False)
class KafkaSettings:
    """Where Kafka is and how long to wait for it.

    ``config`` holds further librdkafka settings passed to every client (security:
    ``security.protocol``, ``sasl.*``, ``ssl.*``; :mod:`~spark_queue.kafka.client_config`
    reads them from a properties file or the environment). Secret values never show in
    this object's repr or in an error.
    """

    bootstrap: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    config: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.bootstrap, str) or not self.bootstrap.strip():
            raise OptionError(
                f"Kafka's bootstrap servers must be HOST:PORT[,...]; got {self.bootstrap!r}."
            )
        if not 0 < self.timeout_s <= 3600:
            raise OptionError(
                f"timeout_s must be more than 0 and at most 3600 seconds; got {self.timeout_s!r}."
            )

    def __repr__(self) -> str:
        return (f"KafkaSettings(bootstrap={self.bootstrap!r}, timeout_s={self.timeout_s!r}, "
                f"config={redact(repr(dict(self.config)), self.config)})")

    @property
    def delivery_timeout_s(self) -> float:
        """How long a produced record may wait for its acknowledgement: librdkafka's
        ``message.timeout.ms`` (alias ``delivery.timeout.ms``) when ``config`` sets it."""
        for name in ("message.timeout.ms", "delivery.timeout.ms"):
            if name in self.config:
                try:
                    return int(self.config[name]) / 1000
                except ValueError as exc:
                    raise OptionError(
                        f"the Kafka client setting {name} must be milliseconds (an integer); "
                        f"got {self.config[name]!r}."
                    ) from exc
        return max(self.timeout_s, MIN_DELIVERY_TIMEOUT_S)

    def redact(self, text: str) -> str:
        """``text`` without the values of this client's secret settings."""
        return redact(text, self.config)

    def client_config(self, **extra: Any) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap,
            "logger": _LIBRDKAFKA_LOG,
            "error_cb": _error_recorder(self.bootstrap),
            **self.config,
            **extra,
        }

    def unavailable(self, doing: str, exc: object = None) -> KafkaUnavailableError:
        text = exc.str() if hasattr(exc, "str") else exc  # a librdkafka KafkaError
        at, last = _CLIENT_ERRORS.get(self.bootstrap, (0.0, ""))
        if last and last != text and time.monotonic() - at < self.timeout_s + 1:
            text = f"{text}; the client's last error: {last}" if text else last
        cause = f" ({self.redact(str(text))})" if text else ""
        return KafkaUnavailableError(
            f"no Kafka broker at {self.bootstrap} answered within {self.timeout_s:g} s while "
            f"{doing}{cause}: check the address and that the broker runs, or wait longer "
            "with --timeout."
        )


def settings_of(kafka: KafkaSettings | str) -> KafkaSettings:
    """``kafka`` as settings: a bootstrap string (``"host:9092"``) gets the defaults."""
    return KafkaSettings(kafka) if isinstance(kafka, str) else kafka


def admin(settings: KafkaSettings) -> Any:
    confluent()  # first: a missing client is named, whatever is imported below
    from confluent_kafka.admin import AdminClient

    return _built(AdminClient, settings.client_config())


def _built(factory: Any, config: dict[str, Any]) -> Any:
    """A client from ``config``; a setting librdkafka rejects (a --kafka-config typo) is an
    OptionError naming it, not an unexpected exception."""
    kafka = confluent()
    try:
        return factory(config)
    except (kafka.KafkaException, ValueError, TypeError) as exc:
        error = exc.args[0] if exc.args else exc
        text = error.str() if hasattr(error, "str") else str(error)
        raise OptionError(
            f"the Kafka client refused its settings: {redact(text, config)}. Check "
            "--kafka-config, --kafka-config-file and SQLITEQ_KAFKA_CONFIG_* (librdkafka's "
            "setting names: security.protocol, sasl.mechanism, ...)."
        ) from None


def producer(settings: KafkaSettings) -> Any:
    """An idempotent producer with acks=all: per partition, no duplicate and no reorder
    within its session; an error that would leave a gap behind later records is fatal
    (librdkafka's gapless guarantee), and the export checks each delivery's offset."""
    kafka = confluent()
    return _built(
        kafka.Producer,
        settings.client_config(
            **{
                "enable.idempotence": True,
                "enable.gapless.guarantee": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": int(settings.delivery_timeout_s * 1000),
            }
        ),
    )


def consumer(settings: KafkaSettings, group: str = "sqliteq-reader") -> Any:
    """A consumer for assigned partitions: it never joins its group and commits nothing."""
    kafka = confluent()
    return _built(
        kafka.Consumer,
        settings.client_config(
            **{
                "group.id": group,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 50,
            }
        ),
    )


def partitions(client: Any, settings: KafkaSettings, topic: str) -> list[int] | None:
    """The partition ids of ``topic``, None if Kafka has no such topic; KafkaTopicError if
    it may not be described (not authorised); KafkaUnavailableError if no broker answers."""
    kafka = confluent()
    try:
        # Metadata of every topic: a request naming the topic would make a broker with
        # auto.create.topics.enable (Kafka's default) create it, with the broker's defaults.
        metadata = client.list_topics(timeout=settings.timeout_s)
    except kafka.KafkaException as exc:
        if hasattr(client, "poll"):
            client.poll(0)  # serves error_cb: why no broker answered (refused credentials)
        raise settings.unavailable(f"asking for topic {topic!r}", exc.args[0]) from exc
    found = metadata.topics.get(topic)
    if found is None:
        return None
    if found.error is not None:
        if found.error.code() == kafka.KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        raise KafkaTopicError(
            f"Kafka topic {topic!r} at {settings.bootstrap} cannot be used: "
            f"{found.error.str()}; check its name and this client's ACLs."
        )
    return sorted(found.partitions)


def create_topic(
    client: Any,
    settings: KafkaSettings,
    topic: str,
    replication_factor: int | None = None,
    config: Mapping[str, str] | None = None,
) -> list[int]:
    """Create ``topic`` with one partition, :data:`EXPORT_TOPIC_CONFIG` updated by ``config``,
    and ``replication_factor`` replicas (None: the broker's default.replication.factor); if it
    exists by now (a metadata answer older than its creation), it is left as it is. Returns
    its partitions once every client can see them: ``[0]`` unless it existed."""
    kafka = confluent()
    from confluent_kafka.admin import NewTopic

    replicas = -1 if replication_factor is None else replication_factor
    future = client.create_topics(
        [NewTopic(topic, num_partitions=1, replication_factor=replicas,
                  config={**EXPORT_TOPIC_CONFIG, **(config or {})})],
        operation_timeout=settings.timeout_s,
        request_timeout=settings.timeout_s,
    )[topic]
    try:
        future.result(timeout=settings.timeout_s + 1)
    except kafka.KafkaException as exc:
        error = exc.args[0]
        if error.code() != kafka.KafkaError.TOPIC_ALREADY_EXISTS:
            raise KafkaTopicError(
                f"cannot create Kafka topic {topic!r} at {settings.bootstrap}: {error.str()} "
                "(check --replication-factor against the brokers there, and --topic-config)."
            ) from exc
    except TimeoutError as exc:
        raise settings.unavailable(f"creating topic {topic!r}") from exc
    # A new topic's leader takes a moment to be known to every client.
    deadline = time.monotonic() + settings.timeout_s
    while True:
        found = partitions(client, settings, topic)
        if found:
            return found
        if time.monotonic() > deadline:
            raise settings.unavailable(f"waiting for new topic {topic!r}")
        time.sleep(0.05)


def watermarks(
    reader: Any, settings: KafkaSettings, topic: str, partition: int = 0
) -> tuple[int, int]:
    """``(low, high)`` of a partition: its first offset and the next offset to be written."""
    kafka = confluent()
    deadline = time.monotonic() + settings.timeout_s
    while True:
        try:
            low, high = reader.get_watermark_offsets(
                kafka.TopicPartition(topic, partition), timeout=settings.timeout_s, cached=False
            )
            return low, high
        except kafka.KafkaException as exc:
            # A topic created a moment ago is not yet in this client's metadata, and a
            # partition whose leader moves (a new topic, a broker restart) answers "not
            # leader" until the client learns the new one: both pass, so wait for them.
            error = exc.args[0]
            passing = error.retriable() or error.code() in (
                kafka.KafkaError._UNKNOWN_PARTITION,
                kafka.KafkaError.UNKNOWN_TOPIC_OR_PART,
                kafka.KafkaError.NOT_LEADER_FOR_PARTITION,
                kafka.KafkaError.LEADER_NOT_AVAILABLE,
            )
            if not passing or time.monotonic() > deadline:
                raise settings.unavailable(
                    f"reading the offsets of {topic!r}", exc.args[0]
                ) from exc
            time.sleep(0.05)


def read_range(
    reader: Any, settings: KafkaSettings, topic: str, partition: int, start: int, end: int
) -> Iterator[Any]:
    """Messages of one partition with offsets in ``[start, end)``, in order (a compacted or
    transactional log may skip offsets). Each wait for the next message is bounded."""
    kafka = confluent()
    if start >= end:
        return
    try:
        reader.assign([kafka.TopicPartition(topic, partition, start)])
    except kafka.KafkaException as exc:
        raise raise_for(exc, settings, f"reading {topic!r} [{partition}]") from exc
    try:
        deadline = time.monotonic() + settings.timeout_s
        while True:
            msg = reader.poll(0.2)
            if msg is None:
                if time.monotonic() > deadline:
                    raise settings.unavailable(f"reading {topic!r} [{partition}] at {start}")
                continue
            deadline = time.monotonic() + settings.timeout_s
            error = msg.error()
            if error is not None:
                if error.code() == kafka.KafkaError._PARTITION_EOF:
                    if msg.offset() >= end:
                        return
                    continue
                if transient(error):  # the broker went away while answering
                    raise settings.unavailable(f"reading {topic!r} [{partition}]", error)
                raise KafkaError(f"reading Kafka topic {topic!r} [{partition}]: "
                                 f"{settings.redact(error.str())}")
            if msg.offset() >= end:
                return
            if msg.offset() >= start:
                yield msg
            if msg.offset() >= end - 1:
                return
    finally:
        reader.unassign()


def raise_for(exc: Exception, settings: KafkaSettings, doing: str) -> KafkaError:
    """A KafkaException from a call on the broker, as one of our errors."""
    kafka = confluent()
    error = exc.args[0] if exc.args else None
    if isinstance(error, kafka.KafkaError) and error.code() in (
        kafka.KafkaError._TRANSPORT,
        kafka.KafkaError._TIMED_OUT,
        kafka.KafkaError._ALL_BROKERS_DOWN,
    ):
        return settings.unavailable(doing, error.str())
    text = error.str() if isinstance(error, kafka.KafkaError) else str(exc)
    return KafkaError(f"Kafka at {settings.bootstrap} refused {doing}: {settings.redact(text)}")


def topic_config(client: Any, settings: KafkaSettings, topic: str) -> dict[str, str]:
    """The settings of an existing ``topic`` as the broker applies them (its own and the
    broker's defaults); KafkaUnavailableError if no broker answers."""
    kafka = confluent()
    from confluent_kafka.admin import ConfigResource

    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    try:
        future = client.describe_configs([resource], request_timeout=settings.timeout_s)
        found = future[resource].result(timeout=settings.timeout_s + 1)
    except kafka.KafkaException as exc:
        raise raise_for(exc, settings, f"describing topic {topic!r}") from exc
    except TimeoutError as exc:
        raise settings.unavailable(f"describing topic {topic!r}") from exc
    return {name: entry.value for name, entry in found.items() if entry.value is not None}


# librdkafka's errors that end when the broker or the network is back: a mirror waits them
# out. The idempotent producer's own fatal errors are among them: a new producer resumes
# after checking what Kafka holds, as a rerun does.
_TRANSIENT = (
    "_MSG_TIMED_OUT", "_TIMED_OUT", "_TIMED_OUT_QUEUE", "_TRANSPORT", "_ALL_BROKERS_DOWN",
    "_FATAL", "_GAPLESS_GUARANTEE", "_PURGE_QUEUE", "_PURGE_INFLIGHT", "_RESOLVE",
    "_WAIT_COORD", "_UNKNOWN_PARTITION", "_DESTROY", "OUT_OF_ORDER_SEQUENCE_NUMBER",
    "UNKNOWN_PRODUCER_ID", "NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE",
    "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION", "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "BROKER_NOT_AVAILABLE", "INVALID_PRODUCER_EPOCH",
)


def transient(error: Any) -> bool:
    """Whether a librdkafka ``KafkaError`` (a delivery report's) ends when the broker is back."""
    kafka = confluent()
    codes = {getattr(kafka.KafkaError, name) for name in _TRANSIENT
             if hasattr(kafka.KafkaError, name)}
    return bool(error.retriable()) or error.code() in codes
