"""Capture a Kafka topic into a store: production data for a local replay or a test.

How partitions map: a Kafka topic ``T`` of ONE partition becomes the store topic
``T``; a topic of several partitions becomes one store topic per partition,
``T.0``, ``T.1``, ... (a store topic has one partition, and one topic per
partition keeps each partition's order and offsets apart). ``into`` renames
``T``. Each record keeps its key, headers and timestamp; values keep their
bytes, stored as JSON, text or bytes (``value_format``, see
:func:`~spark_queue.kafka.records.stored_value`). An export's
``sqliteq.types`` header gives keys and values their stored types back and is
removed, as is ``sqliteq.timestamp``, the stamp of an event stamped 0 ms
(:mod:`~spark_queue.kafka.records`): an exported topic comes back as it was.

Offsets: the new store topic keeps Kafka's numbering: its first event gets the
Kafka offset of the first record imported (a time range starting at Kafka offset
1,000 makes a topic starting at 1,000, as if retention had removed the events
before it), so a position in the partition means the same in the store.
``first_offset`` starts it elsewhere (an export's shift, to get the exported
store's offsets back). Store offsets are dense: a compacted or transactional
log skips Kafka offsets, and after the first skip store offsets trail Kafka's
(the result counts the skips). A time range (``since_ms``, ``until_ms``) takes
the records stamped in ``[since, until)`` by Kafka's time index; without it,
everything up to the end offsets when the import starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from spark_queue.errors import KafkaTopicError, OptionError, TopicExistsError
from spark_queue.kafka.client_config import KafkaSettings, as_kafka_settings
from spark_queue.kafka.link import KafkaLink
from spark_queue.kafka.records import (
    KAFKA_VALUE_FORMATS,
    SCHEMA_HEADERS,
    TIMESTAMP_HEADER,
    stored_key,
    stored_timestamp,
    stored_types,
    stored_value,
    text_headers,
)
from spark_queue.store import Record, Store

CHUNK_EVENTS = 5000  # records per store transaction


@dataclass(frozen=True)
class ImportResult:
    kafka_topic: str
    partition: int
    topic: str  # the store topic
    kafka_start: int  # the first Kafka offset asked for
    kafka_end: int  # the Kafka offset after the last one asked for
    imported: int
    store_start: int  # the store offset of the first imported record
    gaps: int  # Kafka offsets skipped in the range (compaction, transaction markers)


def store_topic_names(kafka_topic: str, partitions: list[int], into: str | None) -> dict[int, str]:
    """The documented mapping: one partition -> ``T``; several -> ``T.<partition>``."""
    base = into or kafka_topic
    if len(partitions) == 1:
        return {partitions[0]: base}
    return {p: f"{base}.{p}" for p in partitions}


def import_topic(
    path: str | os.PathLike[str],
    kafka: KafkaSettings | str,
    kafka_topic: str,
    *,
    into: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
    value_format: str = "auto",
    first_offset: int | None = None,
) -> list[ImportResult]:
    """Import every partition of ``kafka_topic`` (records in the time range, if given) into
    the store at ``path``, creating it; see the module doc for names and offsets. A store
    topic that holds or held events is refused (TopicExistsError) before anything is
    written, unless it ends where the import starts (an import continued): import into a
    new name with ``into``."""
    settings = as_kafka_settings(kafka)
    if value_format not in KAFKA_VALUE_FORMATS:
        raise OptionError(
            f"value_format must be one of {', '.join(KAFKA_VALUE_FORMATS)}; got {value_format!r}."
        )
    if since_ms is not None and until_ms is not None and until_ms < since_ms:
        raise OptionError(f"until ({until_ms}) is before since ({since_ms}).")
    with KafkaLink(settings) as link:
        parts = link.partitions(kafka_topic)
        if not parts:
            raise KafkaTopicError(f"Kafka topic {kafka_topic!r} does not exist at "
                                  f"{link.settings.bootstrap}; check the name.")
        names = store_topic_names(kafka_topic, parts, into)
        ranges = {p: _range(link, kafka_topic, p, since_ms, until_ms) for p in parts}
        starts = {p: ranges[p][0] if first_offset is None else first_offset for p in parts}
        with Store(path) as store:
            for p, name in names.items():
                topic = store.topic(name)
                if topic.exists() and topic.latest_offset() not in (0, starts[p]):
                    raise TopicExistsError(
                        f"store topic {name!r} holds or held events; an import writes a new "
                        "topic (or continues one where it ends): name another with --into, or "
                        "delete it (`sqliteq topic delete`)."
                    )
            for p, name in names.items():
                store.topic(name).start_at(starts[p])
            return [
                _import_partition(store, link, kafka_topic, p, names[p], ranges[p], value_format)
                for p in parts
            ]


def _range(
    link: KafkaLink, topic: str, partition: int, since_ms: int | None, until_ms: int | None
) -> tuple[int, int]:
    """The offsets of the records stamped in ``[since_ms, until_ms)``, within what the
    partition holds now (all of it without a time range)."""
    low, high = link.watermarks(topic, partition)
    start = low if since_ms is None else link.offset_for_time(topic, partition, since_ms)
    end = high if until_ms is None else link.offset_for_time(topic, partition, until_ms)
    start = high if start is None else start  # None: no record is stamped that late
    end = high if end is None else end
    return max(start, low), min(max(end, start), high)


def _import_partition(
    store: Store,
    link: KafkaLink,
    kafka_topic: str,
    partition: int,
    topic: str,
    span: tuple[int, int],
    value_format: str,
) -> ImportResult:
    start, end = span
    first = store.topic(topic).latest_offset()
    batch: list[Record] = []
    imported = gaps = 0
    expected = start
    for msg in link.read_messages(kafka_topic, partition, start, end):
        gaps += msg.offset != expected
        expected = msg.offset + 1
        where = f"{kafka_topic!r} [{partition}] offset {msg.offset}"
        headers = text_headers(msg.headers, where)
        types = stored_types(headers, where)  # an export's marks, taken out of the headers
        stamp: int | None = msg.timestamp_ms
        if msg.timestamp_type == 0 or msg.timestamp_ms < 0:  # 0: TIMESTAMP_NOT_AVAILABLE;
            stamp = None  # the store stamps it now
        if headers and TIMESTAMP_HEADER in headers:
            stamp = stored_timestamp(headers, 0, where)
            del headers[TIMESTAMP_HEADER]
        for name in SCHEMA_HEADERS:  # an export's, for a Kafka side; the store keeps schemas
            if headers:
                headers.pop(name, None)
        batch.append(
            Record(
                stored_value(msg.value, value_format, where, types.get("value")),
                stored_key(msg.key, types.get("key")),
                headers or None,
                stamp,
            )
        )
        if len(batch) >= CHUNK_EVENTS:
            imported += len(store.publish_many(topic, batch))
            batch = []
    if batch:
        imported += len(store.publish_many(topic, batch))
    return ImportResult(kafka_topic, partition, topic, start, end, imported, first, gaps)
