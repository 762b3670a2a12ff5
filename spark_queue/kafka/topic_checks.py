"""The Kafka topic settings under which a copy stays the store's topic, offset for offset.

An export writes the store's offsets and timestamps into a topic of one partition; three
topic settings can undo that after the records are in:

- ``cleanup.policy`` other than ``delete``: compaction removes every record whose key
  comes again later, leaving holes in the offsets a position means.
- ``message.timestamp.type=LogAppendTime``: the broker replaces the store's timestamps
  with the time it appends each record.
- ``retention.ms`` shorter than the age of events still to export: the broker deletes them
  (by CreateTime) soon after they arrive.

:func:`refuse_or_warn` refuses such a topic naming each setting and its fix, or, with ``force``,
returns them for a warning. It checks the settings an export creates a topic with
(:data:`EXPORT_TOPIC_CONFIG` and ``--topic-config``) and, for a topic that exists, the
broker's answer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from spark_queue.errors import KafkaTopicError
from spark_queue.store import Store

# Topics an export creates keep every event, with the store's timestamps: Kafka's
# defaults would delete events older than 7 days at once (retention.ms) and refuse
# timestamps more than an hour ahead of the broker's clock.
EXPORT_TOPIC_CONFIG = {
    "retention.ms": "-1",
    "message.timestamp.type": "CreateTime",
    "message.timestamp.before.max.ms": str(2**63 - 1),
    "message.timestamp.after.max.ms": str(2**63 - 1),
}


def _retention_problem(
    config: Mapping[str, str], store: Store, topic: str, start: int, now_ms: int
) -> str | None:
    text = config.get("retention.ms", "-1")
    try:
        retention_ms = int(text)
    except ValueError:
        return f"retention.ms={text} (not milliseconds)"
    if retention_ms < 0 or start >= store.topic(topic).latest_offset():
        return None
    first_young = store.topic(topic).offset_for_timestamp(now_ms - retention_ms)
    if first_young <= start:
        return None
    return (
        f"retention.ms={retention_ms} (store topic {topic!r}'s events {start} to "
        f"{first_young - 1} are older: Kafka would delete them once copied; set retention.ms=-1 "
        "or longer than their age)"
    )


def problems(
    config: Mapping[str, str], store: Store, topic: str, start: int, now_ms: int | None = None
) -> list[str]:
    """The settings of ``config`` under which Kafka would not keep store topic ``topic``'s
    events from ``start`` on as the export writes them, each with its fix."""
    found = []
    policy = config.get("cleanup.policy", "delete")
    if {part.strip() for part in policy.split(",")} != {"delete"}:
        found.append(
            f"cleanup.policy={policy} (compaction removes records whose key comes again, "
            "leaving holes in the offsets; set cleanup.policy=delete)"
        )
    stamps = config.get("message.timestamp.type", "CreateTime")
    if stamps != "CreateTime":
        found.append(
            f"message.timestamp.type={stamps} (the broker would replace the store's "
            "timestamps; set message.timestamp.type=CreateTime)"
        )
    now = int(time.time() * 1000) if now_ms is None else now_ms
    retention = _retention_problem(config, store, topic, start, now)
    if retention is not None:
        found.append(retention)
    return found


def refuse_or_warn(
    config: Mapping[str, str],
    store: Store,
    topic: str,
    kafka_topic: str,
    start: int,
    *,
    force: bool,
    creating: bool,
) -> list[str]:
    """:func:`problems` as a KafkaTopicError naming the Kafka topic, or with ``force`` as
    the list to warn about."""
    found = problems(config, store, topic, start)
    if found and not force:
        where = "--topic-config would create" if creating else "holds"
        how = ("change --topic-config" if creating else
               f"kafka-configs.sh --alter --entity-type topics --entity-name {kafka_topic} "
               "--add-config ...")
        raise KafkaTopicError(
            f"Kafka topic {kafka_topic!r} {where} settings under which it cannot stay store "
            f"topic {topic!r}'s copy: {'; '.join(found)}. Fix them ({how}), export to a new "
            "topic (--prefix), or export anyway with --force."
        )
    return found
