"""Kafka beside spark_queue in the benchmarks: ``--kafka-bootstrap HOST:PORT``.

``store``, ``sink``, ``source`` and ``latency`` take the flag; with it they put
a real Kafka broker's producer, sink, source or latency beside their sqliteq
rows, in the same run (and the same SparkSession). Without it, or when no
broker answers, they say so in one line and run without Kafka. A local broker:
``scripts/kafka-broker start`` (see CONTRIBUTING.md).

The producer is confluent-kafka (librdkafka, the ``bench`` extra) with the
settings a durable Kafka producer uses: ``acks=all``, idempotence on,
``linger.ms=5``. Spark's Kafka connector comes from Spark's own package
resolution (``spark.jars.packages``, :func:`spark_package`), set only on a
session that asked for Kafka. Topics are named per run and deleted at the end.

Imports confluent_kafka and pyspark only inside functions: ``--help`` loads
neither.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

#: The producer settings every Kafka row uses (the durable ones: a write is
#: acknowledged once the partition's in-sync replicas hold it, exactly once per
#: partition across retries).
PRODUCER_SETTINGS = {"acks": "all", "enable.idempotence": True, "linger.ms": 5}
#: Spark's Kafka sink, given the same settings (Kafka's Java client spells them alike).
KAFKA_SINK_OPTIONS = {f"kafka.{k}": str(v).lower() for k, v in PRODUCER_SETTINGS.items()}
_QUIET = {"log_level": 2}  # librdkafka logs reconnects and retries; the benchmark reports


def add_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kafka-bootstrap", metavar="HOST:PORT", default=None,
        help="also measure Kafka on this broker (scripts/kafka-broker start); skipped if absent",
    )


def run_with_broker(args: argparse.Namespace, prefix: str,
                    body: Callable[[argparse.Namespace, str, Kafka | None], int]) -> int:
    """``body(args, workdir, kafka)`` in a fresh temp dir, beside the broker of
    ``--kafka-bootstrap`` if one answers; both are cleaned up whatever ``body`` does."""
    workdir = tempfile.mkdtemp(prefix=prefix)
    kafka = connect(args.kafka_bootstrap)
    try:
        return body(args, workdir, kafka)
    finally:
        if kafka:
            kafka.close()
        shutil.rmtree(workdir, ignore_errors=True)


def connect(bootstrap: str | None) -> Kafka | None:
    """A :class:`Kafka` for ``bootstrap``, or None after one line saying why it is skipped."""
    if not bootstrap:
        print("kafka: skipped (no --kafka-bootstrap HOST:PORT; scripts/kafka-broker start "
              "runs a local broker)")
        return None
    try:
        from confluent_kafka.admin import AdminClient
    except ImportError:
        print("kafka: skipped (confluent-kafka is not installed: pip install -e '.[bench]')")
        return None
    admin = AdminClient({"bootstrap.servers": bootstrap, **_QUIET})
    try:
        metadata = admin.list_topics(timeout=10)
    except Exception as exc:  # noqa: BLE001 - KafkaException, whatever the broker's trouble
        print(f"kafka: skipped (no broker answers at {bootstrap}: {exc})")
        return None
    if not metadata.brokers:
        print(f"kafka: skipped (the cluster at {bootstrap} lists no broker)")
        return None
    return Kafka(bootstrap, admin)


def spark_package() -> str:
    """Spark's Kafka connector for the pyspark that runs (Scala 2.13, as every 4.x)."""
    import pyspark

    version = pyspark.__version__.split("+")[0].split(".dev")[0]
    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"


def session_conf(kafka: Kafka | None) -> dict[str, Any]:
    """What a benchmark's SparkSession needs for Kafka: the connector through Spark's own
    package resolution (fetched once into Ivy's cache), only when Kafka was asked for."""
    return {"spark.jars.packages": spark_package()} if kafka else {}


class Kafka:
    """One broker: topics for this run, a producer, counts, and Spark's options for it."""

    def __init__(self, bootstrap: str, admin) -> None:
        self.bootstrap = bootstrap
        self._admin = admin
        self._run = uuid.uuid4().hex[:8]
        self._topics: list[str] = []

    def describe(self) -> str:
        brokers = self._admin.list_topics(timeout=10).brokers
        return (f"Kafka at {self.bootstrap} ({len(brokers)} broker(s)); producer "
                + ", ".join(f"{k}={v}" for k, v in PRODUCER_SETTINGS.items()))

    def new_topic(self, name: str, partitions: int = 1) -> str:
        """Create a topic new to this run (``sqbench-<run>-<name>-<n>``, replication 1) and
        wait until it exists."""
        from confluent_kafka.admin import NewTopic

        topic = f"sqbench-{self._run}-{name}-{len(self._topics)}"
        futures = self._admin.create_topics([NewTopic(topic, partitions, 1)])
        futures[topic].result(timeout=60)
        self._topics.append(topic)
        # Created is not yet led: wait until every partition has a leader, so that no
        # timed produce or read starts with the broker's leader election.
        deadline = time.monotonic() + 60
        while not self._led(topic, partitions):
            if time.monotonic() > deadline:
                raise RuntimeError(f"kafka: {topic} has no leader for every partition after 60 s")
            time.sleep(0.05)
        return topic

    def _led(self, topic: str, partitions: int) -> bool:
        found = self._admin.list_topics(topic, timeout=10).topics.get(topic)
        if found is None or found.error is not None or len(found.partitions) != partitions:
            return False
        return all(p.leader >= 0 and p.error is None for p in found.partitions.values())

    def producer(self, **overrides: object):
        """A confluent-kafka producer with :data:`PRODUCER_SETTINGS`, as updated by
        ``overrides`` (Kafka's names, e.g. ``{"linger.ms": 0}`` passed as ``**{...}``)."""
        from confluent_kafka import Producer

        return Producer({"bootstrap.servers": self.bootstrap, **PRODUCER_SETTINGS, **overrides,
                         **_QUIET})

    def produce(self, topic: str, values: Sequence[bytes],
                keys: Sequence[bytes] | None = None) -> float:
        """Seconds to send ``values`` (with ``keys``) from one thread and have every one
        acknowledged (``flush`` included); checks that the topic then holds them all."""
        before = self.count(topic)
        producer = self.producer()
        producer.list_topics(topic, timeout=10)  # connected, topic known, before the clock
        started = time.perf_counter()
        send(producer, topic, values, keys)
        elapsed = time.perf_counter() - started
        self.check_count(topic, before + len(values))
        return elapsed

    def check_count(self, topic: str, expected: int) -> None:
        got = self.count(topic)
        if got != expected:
            raise RuntimeError(f"kafka: {topic} holds {got} messages, expected {expected}")

    def count(self, topic: str) -> int:
        """Messages in ``topic``: the sum of its partitions' high watermarks."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "sqbench-count",
                             "enable.auto.commit": False, **_QUIET})
        try:
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                       for p in partitions)
        finally:
            consumer.close()

    def source_options(self, topic: str) -> dict[str, str]:
        """Spark's Kafka source on ``topic``, from its earliest offset."""
        return {"kafka.bootstrap.servers": self.bootstrap, "subscribe": topic,
                "startingOffsets": "earliest"}

    def sink_options(self, topic: str) -> dict[str, str]:
        """Spark's Kafka sink into ``topic``, with the producer settings above."""
        return {"kafka.bootstrap.servers": self.bootstrap, "topic": topic, **KAFKA_SINK_OPTIONS}

    def close(self) -> None:
        """Delete this run's topics (the broker's disk is not the benchmark's to fill)."""
        if self._topics:
            futures = self._admin.delete_topics(self._topics, operation_timeout=60)
            for future in futures.values():
                future.result(timeout=60)
            self._topics.clear()


def send(producer, topic: str, values: Sequence[bytes],
         keys: Sequence[bytes] | None = None, on_delivery: Any = None) -> None:
    """Produce every value (with its key) and flush: returns once all are acknowledged.
    ``on_delivery(error, message)``: Kafka's per-message answer, the peer of a future."""
    produce, poll = producer.produce, producer.poll
    answer = {} if on_delivery is None else {"on_delivery": on_delivery}
    for value, key in zip(values, keys if keys is not None else [None] * len(values),
                          strict=True):
        while True:
            try:
                produce(topic, value, key, **answer)
                break
            except BufferError:  # librdkafka's queue is full: serve deliveries, then retry
                poll(0.005)
    left = producer.flush(120)
    if left:
        raise RuntimeError(f"kafka: {left} messages to {topic} unacknowledged after 120 s")


def json_events(n: int, value_bytes: int = 100) -> tuple[list[str], list[str]]:
    """``n`` 8-byte keys and JSON object values of ``value_bytes`` characters, the same
    text for sqliteq and (UTF-8 encoded) Kafka."""
    keys = [f"{i % 100_000_000:08d}" for i in range(n)]
    values = []
    for i in range(n):
        head = f'{{"id":{i},"user":"u{i % 1000:03d}","amount":{i % 9973},"note":"'
        values.append(head + "x" * max(0, value_bytes - len(head) - 2) + '"}')
    return keys, values
