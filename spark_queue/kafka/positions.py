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

from spark_queue.errors import KafkaTopicError, UnknownConsumerError
from spark_queue.kafka.client_config import KafkaSettings
from spark_queue.kafka.link import KafkaLink
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
    link = KafkaLink(kafka)  # first: bad settings fail before the store is opened
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
            shifts[topic] = store.topic(topic).mirror_shift()
    with link:
        planned = [_plan(link, topic, prefix + topic, saved[topic], shifts[topic])
                   for topic in wanted]
        link.commit_group_offsets(group or consumer,
                                  {p.kafka_topic: p.kafka_offset for p in planned})
    return planned


def _plan(
    link: KafkaLink,
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
    _, high = link.watermarks(kafka_topic)
    kafka_offset = max(0, store_offset - shift)
    if kafka_offset > high:
        raise KafkaTopicError(
            f"Kafka topic {kafka_topic!r} ends at offset {high}, before the consumer's position "
            f"{kafka_offset} (store offset {store_offset}, shift {shift}): export the topic "
            "again to bring the copy up to date, then commit."
        )
    return GroupOffset(topic, kafka_topic, store_offset, kafka_offset)
