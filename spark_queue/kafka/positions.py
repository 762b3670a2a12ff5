"""A consumer's saved offsets in the store, as a Kafka consumer group's committed offsets.

The store's consumer ``c`` saved, per topic, the next offset ``n`` it will read; in the
exported copy that event is at ``n - shift``. :func:`commit_consumer_offsets` commits
those offsets for a Kafka group (``c`` unless named), so a Kafka consumer joining the
group starts exactly where the store consumer stopped. Kafka accepts offsets for a
group only while it has no active member: commit before the Kafka consumers start.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from spark_queue.errors import KafkaError, KafkaTopicError, UnknownConsumerError
from spark_queue.kafka import client
from spark_queue.kafka.client import KafkaSettings
from spark_queue.store import Store


@dataclass(frozen=True)
class GroupOffset:
    topic: str  # the store topic
    kafka_topic: str
    store_offset: int  # the consumer's saved next offset
    kafka_offset: int  # the group's committed offset (next to read)


def commit_consumer_offsets(
    path: str | os.PathLike[str],
    kafka: KafkaSettings | str,
    consumer: str,
    *,
    group: str | None = None,
    topics: Sequence[str] | None = None,
    prefix: str = "",
) -> list[GroupOffset]:
    """Commit ``consumer``'s saved offsets (of ``topics``, default all it has) for the Kafka
    group ``group`` (default: the consumer's name), shifted as each topic was exported.

    Every offset is checked before any is committed: the topic was exported, and the
    copy already holds the events up to the offset (export first, then commit).
    """
    settings = client.settings_of(kafka)
    module = client.confluent()
    from confluent_kafka import ConsumerGroupTopicPartitions

    with Store(path, create=False, readonly=True) as store:
        saved = store.committed_offsets(consumer)
        if not saved:
            raise UnknownConsumerError(
                f"consumer {consumer!r} has no saved offsets in {os.fspath(path)!r}; "
                "`sqliteq consumers PATH` lists the consumers."
            )
        wanted = list(topics) if topics else sorted(saved)
        shifts = {}
        for topic in wanted:
            if topic not in saved:
                raise UnknownConsumerError(
                    f"consumer {consumer!r} has no saved offset for topic {topic!r}; it has "
                    f"{', '.join(sorted(saved))}."
                )
            shifts[topic] = store.mirror_shift(topic)
    reader = client.consumer(settings)
    try:
        planned = []
        for topic in wanted:
            planned.append(
                _plan(settings, reader, topic, prefix + topic, saved[topic], shifts[topic])
            )
    finally:
        reader.close()
    name = group or consumer
    request = ConsumerGroupTopicPartitions(
        name, [module.TopicPartition(p.kafka_topic, 0, p.kafka_offset) for p in planned]
    )
    admin = client.admin(settings)  # held: a collected client never completes its futures
    future = admin.alter_consumer_group_offsets([request], request_timeout=settings.timeout_s)[
        name
    ]
    try:
        answer = future.result(timeout=settings.timeout_s + 1)
    except module.KafkaException as exc:
        raise KafkaError(
            f"Kafka at {settings.bootstrap} refused offsets for group {name!r}: "
            f"{exc.args[0].str()} (a group with running consumers cannot be given offsets: "
            "stop them first)."
        ) from exc
    except TimeoutError as exc:
        raise settings.unavailable(f"committing offsets for group {name!r}") from exc
    for part in answer.topic_partitions:
        if part.error is not None:
            raise KafkaError(
                f"Kafka refused the offset of {part.topic!r} for group {name!r}: "
                f"{part.error.str()}."
            )
    return planned


def _plan(
    settings: KafkaSettings,
    reader: object,
    topic: str,
    kafka_topic: str,
    store_offset: int,
    shift: int | None,
) -> GroupOffset:
    if shift is None:
        raise KafkaTopicError(
            f"store topic {topic!r} was never exported to Kafka: run `sqliteq kafka export` "
            "first, so its Kafka offsets are known."
        )
    _, high = client.watermarks(reader, settings, kafka_topic)
    kafka_offset = max(0, store_offset - shift)
    if kafka_offset > high:
        raise KafkaTopicError(
            f"Kafka topic {kafka_topic!r} ends at offset {high}, before the consumer's position "
            f"{kafka_offset} (store offset {store_offset}, shift {shift}): export the topic "
            "again to bring the copy up to date, then commit."
        )
    return GroupOffset(topic, kafka_topic, store_offset, kafka_offset)
