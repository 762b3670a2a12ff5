"""The Kafka link: the one owner of a broker's clients, as ``StoreConnection`` is of a store file.

A :class:`KafkaLink` holds a command's admin client, producer and consumer, each built at
first use, all closed once (``close``, or ``with``). The one module that loads confluent-kafka
(the ``kafka`` extra, never at module level: if missing, KafkaClientMissingError names it),
waits on the admin client's futures and turns librdkafka's errors into ours; it answers with
plain data (:mod:`~spark_queue.kafka.link_types`, :class:`~spark_queue.kafka.records.KafkaRecord`),
and checks its producer's answers itself (:mod:`~spark_queue.kafka.deliveries`). Every wait is
bounded by ``timeout_s``: past it, a KafkaUnavailableError names the servers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, overload

from spark_queue.errors import (
    KafkaClientMissingError,
    KafkaError,
    KafkaTopicError,
    KafkaUnavailableError,
    OptionError,
)
from spark_queue.kafka.client_config import (
    LIBRDKAFKA_LOG,
    KafkaSettings,
    as_kafka_settings,
    redact,
)
from spark_queue.kafka.deliveries import Delivered, TopicDeliveries, refused_record
from spark_queue.kafka.link_types import (
    NO_BROKER_ERRORS,
    SETTLING_ERRORS,
    TRANSIENT_ERRORS,
    DeliveryFailure,
    KafkaTopic,
    LogEnds,
    Watermarks,
)
from spark_queue.kafka.records import Content, KafkaRecord, headers_for_kafka

if TYPE_CHECKING:
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Message, Producer
    from confluent_kafka import KafkaError as LibrdkafkaError
    from confluent_kafka.admin import AdminClient

INSTALL_HINT = "pip install 'spark-queue[kafka]' (in a checkout: pip install -e '.[kafka]')"
READER_GROUP = "sqliteq-reader"  # the consumer's group.id: it never joins it, commits nothing
_Answer = TypeVar("_Answer")

def _confluent() -> ModuleType:
    """The ``confluent_kafka`` module; KafkaClientMissingError names the extra if absent."""
    try:
        import confluent_kafka
    except ImportError as exc:
        raise KafkaClientMissingError(
            f"the Kafka commands need the Kafka client confluent-kafka, which is not "
            f"installed here: {INSTALL_HINT}"
        ) from exc
    return confluent_kafka


def _codes(names: Iterable[str]) -> set[int]:
    errors = _confluent().KafkaError
    return {getattr(errors, name) for name in names if hasattr(errors, name)}


def record_of(msg: Message, topic: str, partition: int, offset: int) -> KafkaRecord:
    """A consumer's message as a :class:`KafkaRecord`: header values as bytes, in a list."""
    kind, stamp = msg.timestamp()
    found = msg.headers()  # a consumer's are a list; the client's type allows a dict too
    pairs = found.items() if isinstance(found, dict) else found or ()
    headers = [(name, value.encode() if isinstance(value, str) else value)
               for name, value in pairs] or None
    return KafkaRecord(topic, partition, offset, msg.key(), msg.value(), headers, kind, stamp)


def error_text(error: object) -> str:
    """A librdkafka error (or anything else) as text: the one place that tells them apart."""
    return error.str() if isinstance(error, _confluent().KafkaError) else str(error)


class KafkaLink:
    """The clients of one broker (cluster) for one command; see the module doc."""

    def __init__(self, kafka: KafkaSettings | str, group: str = READER_GROUP) -> None:
        self.settings = as_kafka_settings(kafka)
        self.group = group
        _confluent()  # a missing client is named before anything else is done
        self._admin: AdminClient | None = None
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._deliveries: dict[str, TopicDeliveries] = {}  # by topic, from its first produce
        self._closed = False
        # The last error a client reported (librdkafka's error_cb) and when: a broker that
        # refuses the credentials looks like one that does not answer, save for this text.
        self._last_error: tuple[float, str] = (0.0, "")

    def __enter__(self) -> KafkaLink:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Drop what the producer still holds (a rerun resends it after reading Kafka's end)
        and close the clients; a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._producer is not None:
            self._producer.purge()
            self._producer.flush(0)
        if self._consumer is not None:
            self._consumer.close()

    # -- the clients, built at first use ------------------------------------------------
    def client_config(self, **extra: object) -> dict[str, Any]:
        """The librdkafka settings each client is built with (``extra`` over the settings)."""
        def record(error: LibrdkafkaError) -> None:
            self._last_error = (time.monotonic(), error.str())

        return {"bootstrap.servers": self.settings.bootstrap, "logger": LIBRDKAFKA_LOG,
                "error_cb": record, **self.settings.config, **extra}

    def _built(self, factory: Callable[[dict[str, Any]], _Answer], config: dict[str, Any]
               ) -> _Answer:
        """A client from ``config``; a setting librdkafka rejects (a --kafka-config typo) is
        an OptionError naming it, not an unexpected exception."""
        if self._closed:
            raise KafkaError(f"the link to Kafka at {self.settings.bootstrap} was closed; "
                             "open a new KafkaLink.")
        try:
            return factory(config)
        except (_confluent().KafkaException, ValueError, TypeError) as exc:
            text = error_text(exc.args[0] if exc.args else exc)
            raise OptionError(
                f"the Kafka client refused its settings: {redact(text, config)}. Check "
                "--kafka-config, --kafka-config-file and SQLITEQ_KAFKA_CONFIG_* (librdkafka's "
                "setting names: security.protocol, sasl.mechanism, ...)."
            ) from None

    def _admin_client(self) -> AdminClient:
        if self._admin is None:
            from confluent_kafka.admin import AdminClient

            self._admin = self._built(AdminClient, self.client_config())
        return self._admin

    def _producer_client(self) -> Producer:
        """Idempotent, acks=all: per partition no duplicate, no reorder; an error that would leave
        a gap is fatal (gapless guarantee), and :meth:`produce` checks each delivery's offset."""
        if self._producer is None:
            self._producer = self._built(_confluent().Producer, self.client_config(**{
                "enable.idempotence": True, "enable.gapless.guarantee": True, "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": int(self.settings.delivery_timeout_s * 1000)}))
        return self._producer

    def _consumer_client(self) -> Consumer:
        """A consumer for assigned partitions: it never joins its group and commits nothing."""
        if self._consumer is None:
            self._consumer = self._built(_confluent().Consumer, self.client_config(**{
                "group.id": self.group, "enable.auto.commit": False,
                "enable.partition.eof": True, "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 50}))
        return self._consumer

    # -- librdkafka's errors as ours: the one place --------------------------------------
    def unavailable(self, doing: str, cause: object = None) -> KafkaUnavailableError:
        """No broker answered while ``doing``: ``cause`` and the clients' last error say why."""
        text = "" if cause is None else error_text(cause)
        at, last = self._last_error
        if last and last != text and time.monotonic() - at < self.settings.timeout_s + 1:
            text = f"{text}; the client's last error: {last}" if text else last
        reason = f" ({self.settings.redact(text)})" if text else ""
        return KafkaUnavailableError(
            f"no Kafka broker at {self.settings.bootstrap} answered within "
            f"{self.settings.timeout_s:g} s while {doing}{reason}: check the address and that "
            "the broker runs, or wait longer with --timeout."
        )

    def _refused(self, exc: BaseException, doing: str) -> KafkaError:
        """A KafkaException from a call on the broker, as one of our errors."""
        error = exc.args[0] if exc.args else exc
        if isinstance(error, _confluent().KafkaError) and error.code() in _codes(NO_BROKER_ERRORS):
            return self.unavailable(doing, error)
        return KafkaError(f"Kafka at {self.settings.bootstrap} refused {doing}: "
                          f"{self.settings.redact(error_text(error))}")

    def _transient(self, error: LibrdkafkaError) -> bool:
        return bool(error.retriable()) or error.code() in _codes(TRANSIENT_ERRORS)

    def _wait(self, future: Future[_Answer], doing: str,
              refused: Callable[[str], KafkaError] | None = None, passes: tuple[str, ...] = (),
              ) -> _Answer | None:
        """``future``'s answer, the one wait on the admin client: an error in ``passes`` is None,
        another ``refused(its text)`` (default: refused ``doing``), none KafkaUnavailableError."""
        kafka = _confluent()
        try:
            return future.result(timeout=self.settings.timeout_s + 1)
        except kafka.KafkaException as exc:
            error = exc.args[0] if exc.args else exc
            if isinstance(error, kafka.KafkaError) and error.code() in _codes(passes):
                return None
            if refused is None:
                raise self._refused(exc, doing) from exc
            raise refused(self.settings.redact(error_text(error))) from exc
        except TimeoutError as exc:
            raise self.unavailable(doing) from exc

    # -- topics -----------------------------------------------------------------------------
    def partitions(self, topic: str) -> list[int] | None:
        """The partition ids of ``topic``, None if Kafka has no such topic; KafkaTopicError if
        it may not be described (not authorised); KafkaUnavailableError if no broker answers."""
        admin = self._admin_client()
        kafka = _confluent()
        try:
            # Metadata of every topic: a request naming the topic would make a broker with
            # auto.create.topics.enable (Kafka's default) create it, with the broker's defaults.
            metadata = admin.list_topics(timeout=self.settings.timeout_s)
        except kafka.KafkaException as exc:
            admin.poll(0)  # serves error_cb: why no broker answered (refused credentials)
            raise self.unavailable(f"asking for topic {topic!r}", exc.args[0]) from exc
        found = metadata.topics.get(topic)
        if found is None:
            return None
        if found.error is not None:
            if found.error.code() == kafka.KafkaError.UNKNOWN_TOPIC_OR_PART:
                return None
            raise KafkaTopicError(
                f"Kafka topic {topic!r} at {self.settings.bootstrap} cannot be used: "
                f"{found.error.str()}; check its name and this client's ACLs."
            )
        return sorted(found.partitions)

    def describe_topic(self, topic: str) -> KafkaTopic | None:
        """``topic``'s partitions and its settings; None if absent."""
        found = self.partitions(topic)
        return None if found is None else KafkaTopic(topic, found, self.topic_config(topic))

    def create_topic(self, topic: str, config: Mapping[str, str], partitions: int = 1,
                     replication_factor: int | None = None) -> KafkaTopic:
        """Create ``topic`` (replicas None: the broker's default.replication.factor), or leave it
        if it exists by now (an older metadata answer); returns it once clients can see it."""
        from confluent_kafka.admin import NewTopic

        replicas = -1 if replication_factor is None else replication_factor
        new = NewTopic(topic, num_partitions=partitions, replication_factor=replicas,
                       config=dict(config))
        timeout_s = self.settings.timeout_s
        future = self._admin_client().create_topics(
            [new], operation_timeout=timeout_s, request_timeout=timeout_s)[topic]
        self._wait(future, f"creating topic {topic!r}", passes=("TOPIC_ALREADY_EXISTS",),
                   refused=lambda text: KafkaTopicError(
                       f"cannot create Kafka topic {topic!r} at {self.settings.bootstrap}: "
                       f"{text} (check --replication-factor against the brokers there, and "
                       "--topic-config)."))
        deadline = time.monotonic() + timeout_s
        while not (found := self.partitions(topic)):  # a new topic's leader takes a moment
            if time.monotonic() > deadline:
                raise self.unavailable(f"waiting for new topic {topic!r}")
            time.sleep(0.05)
        return KafkaTopic(topic, found, self.topic_config(topic))

    def delete_topic(self, topic: str) -> None:
        future = self._admin_client().delete_topics(
            [topic], operation_timeout=self.settings.timeout_s)[topic]
        self._wait(future, f"deleting topic {topic!r}")

    def topic_config(self, topic: str) -> dict[str, str]:
        """An existing ``topic``'s settings as the broker applies them (its own and defaults)."""
        from confluent_kafka.admin import ConfigResource

        resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
        doing = f"describing topic {topic!r}"
        try:
            future = self._admin_client().describe_configs(
                [resource], request_timeout=self.settings.timeout_s)[resource]
        except _confluent().KafkaException as exc:
            raise self._refused(exc, doing) from exc
        found = self._wait(future, doing) or {}
        return {name: entry.value for name, entry in found.items() if entry.value is not None}

    # -- offsets ----------------------------------------------------------------------------
    def watermarks(self, topic: str, partition: int = 0) -> Watermarks:
        """A partition's first offset and the next offset to be written."""
        kafka = _confluent()
        reader = self._consumer_client()
        deadline = time.monotonic() + self.settings.timeout_s
        while True:
            try:
                low, high = reader.get_watermark_offsets(
                    kafka.TopicPartition(topic, partition), timeout=self.settings.timeout_s,
                    cached=False)
                return Watermarks(low, high)
            except kafka.KafkaException as exc:
                # A topic created a moment ago is not yet in this client's metadata, and a moved
                # leader answers "not leader" until the client learns the new one: wait for both.
                error = exc.args[0]
                passing = error.retriable() or error.code() in _codes(SETTLING_ERRORS)
                if not passing or time.monotonic() > deadline:
                    raise self.unavailable(f"reading the offsets of {topic!r}", error) from exc
                time.sleep(0.05)

    def offset_for_time(self, topic: str, partition: int, time_ms: int) -> int | None:
        """The first offset stamped at or after ``time_ms`` (Kafka's time index), or None."""
        kafka = _confluent()
        try:
            [found] = self._consumer_client().offsets_for_times(
                [kafka.TopicPartition(topic, partition, time_ms)],
                timeout=self.settings.timeout_s)
        except kafka.KafkaException as exc:
            raise self._refused(exc, f"a time lookup in {topic!r}") from exc
        return None if found.offset < 0 else found.offset

    def _group(self, group: str, offsets: Mapping[str, int]
               ) -> list[ConsumerGroupTopicPartitions]:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        parts = [TopicPartition(topic, 0, at) for topic, at in offsets.items()]
        return [ConsumerGroupTopicPartitions(group, parts)]

    def commit_group_offsets(self, group: str, offsets: Mapping[str, int]) -> None:
        """Commit ``{topic: next offset}`` (partition 0 each) for consumer group ``group``."""
        future = self._admin_client().alter_consumer_group_offsets(
            self._group(group, offsets), request_timeout=self.settings.timeout_s)[group]
        answer = self._wait(future, f"committing offsets for group {group!r}",
                            refused=lambda text: KafkaError(
                                f"Kafka at {self.settings.bootstrap} refused offsets for group "
                                f"{group!r}: {text} (a group with running consumers cannot be "
                                "given offsets: stop them first)."))
        for part in answer.topic_partitions if answer is not None else ():
            if part.error is not None:
                raise KafkaError(f"Kafka refused the offset of {part.topic!r} for group "
                                 f"{group!r}: {error_text(part.error)}.")

    def group_offsets(self, group: str, topics: Iterable[str]) -> dict[str, int]:
        """Consumer group ``group``'s committed offsets of ``topics`` (partition 0; negative:
        none committed)."""
        future = self._admin_client().list_consumer_group_offsets(
            self._group(group, dict.fromkeys(topics, -1001)),  # -1001: librdkafka's "none"
            request_timeout=self.settings.timeout_s)[group]
        answer = self._wait(future, f"listing offsets of group {group!r}")
        parts = answer.topic_partitions if answer is not None else []
        return {part.topic: part.offset for part in parts}

    # -- records ----------------------------------------------------------------------------
    def read_messages(self, topic: str, partition: int, start: int, end: int
                      ) -> Iterator[KafkaRecord]:
        """Records of one partition with offsets in ``[start, end)``, in order (a compacted
        or transactional log may skip offsets). Each wait for the next record is bounded."""
        if start >= end:
            return
        kafka = _confluent()
        reader = self._consumer_client()
        where = f"reading {topic!r} [{partition}]"
        try:
            reader.assign([kafka.TopicPartition(topic, partition, start)])
        except kafka.KafkaException as exc:
            raise self._refused(exc, where) from exc
        eof = kafka.KafkaError._PARTITION_EOF
        try:
            deadline = time.monotonic() + self.settings.timeout_s
            while True:
                msg = reader.poll(0.2)
                if msg is None:
                    if time.monotonic() > deadline:
                        raise self.unavailable(f"{where} at {start}")
                    continue
                deadline = time.monotonic() + self.settings.timeout_s
                offset = msg.offset() or 0
                error = msg.error()
                if error is not None:
                    if error.code() == eof:
                        if offset >= end:
                            return
                        continue
                    if self._transient(error):  # the broker went away while answering
                        raise self.unavailable(where, error)
                    raise KafkaError(f"reading Kafka topic {topic!r} [{partition}]: "
                                     f"{self.settings.redact(error.str())}")
                if offset >= end:
                    return
                if offset >= start:
                    yield record_of(msg, topic, partition, offset)
                if offset >= end - 1:
                    return
        finally:
            reader.unassign()

    def log_ends(self, topic: str, count: int, floor: int = 0) -> LogEnds:
        """Partition 0's watermarks and its records in the last ``count`` offsets of
        ``[max(low, floor), high)`` and, before them if any are left, in its first ``count``."""
        low, high = marks = self.watermarks(topic)
        lower = min(high, max(low, floor))
        bounds = [(max(lower, high - count), high)]
        if lower < bounds[0][0]:
            bounds.insert(0, (lower, min(lower + count, bounds[0][0])))
        return LogEnds(marks, [(start, end, list(self.read_messages(topic, 0, start, end)))
                               for start, end in bounds])

    @overload
    def produce(self, topic: str, contents: Iterable[Content], *, at: int, partition: int = 0,
                name: str = ..., numbered_from: int = ...) -> Delivered: ...
    @overload
    def produce(self, topic: str, contents: Iterable[Content], *, at: None = None,
                partition: int = 0, name: str = ..., numbered_from: int = ...) -> None: ...
    def produce(self, topic: str, contents: Iterable[Content], *, at: int | None = None,
                partition: int = 0, name: str = "record", numbered_from: int = 0
                ) -> Delivered | None:
        """Hand ``contents`` to the producer, the first meant for offset ``at``: if given, each
        answer is checked (:mod:`~spark_queue.kafka.deliveries`) and the call returns ``topic``'s
        so far. A refused record is a KafkaError naming it ``name N`` (N from ``numbered_from``);
        whatever ends the call early, the records before it are delivered first."""
        producer = self._producer_client()
        refused = _confluent().KafkaException
        track = TopicDeliveries(0) if at is None else self._deliveries.setdefault(
            topic, TopicDeliveries(at))
        track.sent = first = at or 0

        def report(error: LibrdkafkaError | None, msg: Message) -> None:
            track.answered(msg.offset() or 0, None if error is None else DeliveryFailure(
                self.settings.redact(error.str()), self._transient(error)))

        try:
            for content in contents:
                while True:
                    try:
                        producer.produce(topic, value=content.value, key=content.key,
                                         partition=partition, timestamp=content.timestamp_ms,
                                         headers=headers_for_kafka(content),
                                         on_delivery=None if at is None else report)
                        break
                    except BufferError:
                        producer.poll(0.05)  # the producer's queue is full: let it drain
                    except refused as exc:  # refused before sending: too large, ...
                        what = f"{name} {numbered_from + track.sent - first}"
                        raise refused_record(what, content, self.settings.redact(
                            error_text(exc.args[0]))) from exc
                producer.poll(0)
                track.sent += 1
        except Exception:
            producer.flush(self.settings.timeout_s)  # what came before goes in
            raise
        return None if at is None else track.now()

    def flush(self) -> dict[str, Delivered]:
        """Wait until Kafka answered every produced record; each topic's answers. Unanswered ones
        after the delivery timeout are a KafkaUnavailableError unless an answer broke an order."""
        if self._producer is not None:
            left = self._producer.flush(self.settings.delivery_timeout_s + 5)
            if left and not any(track.now().stopped for track in self._deliveries.values()):
                raise self.unavailable(f"delivering {left} records")
        return {topic: track.now() for topic, track in self._deliveries.items()}

