"""An in-memory stand-in for :class:`~spark_queue.kafka.link.KafkaLink`: the calls the
Exporter makes, on topics of one partition held as lists, with a hook before each call.

What it keeps of Kafka: a topic's records get offsets in the order produced, the producer's
answers are checked in order (the link's own :class:`TopicDeliveries`), a record lands at the
log's end whatever offset it was meant for. No broker, no waits: a test can run a store
housekeeping run, a forced prune or a second exporter exactly inside the window it probes
(``FakeKafka.before``), in milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from spark_queue.kafka.client_config import KafkaSettings
from spark_queue.kafka.deliveries import Delivered, TopicDeliveries
from spark_queue.kafka.link_types import KafkaTopic, LogEnds, Watermarks
from spark_queue.kafka.records import Content, KafkaRecord


class FakeKafka:
    """A cluster: ``logs[topic]`` is partition 0's records; ``before(call)`` runs first in
    every link call (``"log_ends"``, ``"produce"``, ...); ``calls`` counts them by name."""

    def __init__(self) -> None:
        self.logs: dict[str, list[Content]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.calls: dict[str, int] = {}
        self.before: Callable[[str], None] = lambda call: None

    def link(self, settings: KafkaSettings | str, group: str = "") -> FakeLink:
        return FakeLink(self, settings)


class FakeLink:
    def __init__(self, kafka: FakeKafka, settings: KafkaSettings | str) -> None:
        self.kafka = kafka
        self.settings = settings if isinstance(settings, KafkaSettings) else KafkaSettings(
            settings)
        self.deliveries: dict[str, TopicDeliveries] = {}

    def _call(self, name: str) -> None:
        self.kafka.calls[name] = self.kafka.calls.get(name, 0) + 1
        self.kafka.before(name)

    def describe_topic(self, topic: str) -> KafkaTopic | None:
        self._call("describe_topic")
        if topic not in self.kafka.logs:
            return None
        return KafkaTopic(topic, [0], dict(self.kafka.configs[topic]))

    def create_topic(self, topic: str, config: Mapping[str, str], partitions: int = 1,
                     replication_factor: int | None = None) -> KafkaTopic:
        self._call("create_topic")
        self.kafka.logs.setdefault(topic, [])
        self.kafka.configs.setdefault(topic, dict(config))
        return KafkaTopic(topic, [0], dict(self.kafka.configs[topic]))

    def log_ends(self, topic: str, count: int, floor: int = 0) -> LogEnds:
        self._call("log_ends")
        log = self.kafka.logs[topic]
        high = len(log)
        lower = min(high, max(0, floor))
        bounds = [(max(lower, high - count), high)]
        if lower < bounds[0][0]:
            bounds.insert(0, (lower, min(lower + count, bounds[0][0])))
        return LogEnds(Watermarks(0, high), [
            (start, end, [self._record(topic, offset) for offset in range(start, end)])
            for start, end in bounds])

    def _record(self, topic: str, offset: int) -> KafkaRecord:
        content = self.kafka.logs[topic][offset]
        headers = [(name, value.encode()) for name, value in content.headers] or None
        return KafkaRecord(topic, 0, offset, content.key, content.value, headers, 1,
                           content.timestamp_ms)

    def produce(self, topic: str, contents: Iterable[Content], *, at: int, partition: int = 0,
                name: str = "record", numbered_from: int = 0) -> Delivered:
        self._call("produce")
        track = self.deliveries.setdefault(topic, TopicDeliveries(at))
        track.sent = at
        log = self.kafka.logs[topic]
        for content in contents:
            log.append(content)
            track.answered(len(log) - 1, None)
            track.sent += 1
        return track.now()

    def flush(self) -> dict[str, Delivered]:
        self._call("flush")
        return {topic: track.now() for topic, track in self.deliveries.items()}

    def close(self) -> None:
        self.deliveries.clear()
