"""The JSON forms of the source options, Kafka's and the flat one.

Kafka names a position per topic *partition*: ``{"clicks": {"0": 42}}``; a
``sqliteq`` topic is one partition, 0, so ``{"clicks": 42}`` says the same
and is accepted too. Any partition other than 0 is an error naming it, never
silently read as 0. ``-2`` means earliest and ``-1`` latest, in offsets and
in timestamps alike (as in Kafka's ``ListOffsets``). ``assign`` is Kafka's
``{"clicks": [0]}``.
"""

from __future__ import annotations

import json

from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import OptionError

EARLIEST_SENTINEL = -2
LATEST_SENTINEL = -1
PARTITION = 0  # the one partition of every topic

#: The key of a streaming source's offsets that names the store file they are positions
#: in (its identity, ``spark_queue.store.store_id``): ``{"@store": "9f0c...", "clicks": 42}``.
#: No topic can be named so (topic names are letters, digits, ``_``, ``.`` and ``-``).
#: Checkpoints written before version 7 of the file format have no such key.
STORE_KEY = "@store"
#: The key of a streaming source's offsets that holds, per topic, the fingerprint of the
#: last event the query read, ``[offset, ts_ms, digest]`` (``spark_queue.store.
#: event_fingerprints``): ``{"@last": {"clicks": [41, 1764300000000, "9c1d0e..."]}}``. At a
#: restart the source checks that the store still holds those very events (a store put
#: back to an older copy may have grown again: :mod:`spark_queue.connector.source.lineage`).
#: Checkpoints written before it have no such key.
LAST_READ_KEY = "@last"
#: The key naming the streaming query whose offsets these are (an id its source chose at
#: the query's start, carried from offset to offset and so kept by the checkpoint):
#: ``{"@reader": "5c1d...", "@store": "9f0c...", "clicks": 42}``. Every query records under it
#: the end it chose for each batch start (:mod:`spark_queue.connector.source.batch_plans`);
#: queries sharing one ``consumer`` name each save their own position under it too.
#: Checkpoints written before version 10 of the file format (or, without a ``consumer``,
#: before version 11's plans covered such queries) have no such key; the next batch
#: planned records one.
READER_KEY = "@reader"
#: Keys of the source's offsets that are not topics; every other key is a topic.
RESERVED_KEYS = frozenset({STORE_KEY, LAST_READ_KEY, READER_KEY})


def split_store(offsets: dict) -> tuple[object, dict]:
    """``(the recorded store identity or None, the topics' offsets)``: the keys that are
    not topics (:data:`RESERVED_KEYS`: identity, last-read fingerprints, query id) left
    out; values unchecked."""
    if not RESERVED_KEYS.intersection(offsets):
        return None, offsets
    rest = {key: value for key, value in offsets.items() if key not in RESERVED_KEYS}
    return offsets.get(STORE_KEY), rest


def reader_of(offsets: object) -> str | None:
    """The query id the offsets carry (``@reader``), or None."""
    reader = offsets.get(READER_KEY) if isinstance(offsets, dict) else None
    return reader if isinstance(reader, str) else None


def _loads_object(name: str, raw: str, allowed: str) -> dict:
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise _malformed(name, raw, allowed) from None
    if not isinstance(parsed, dict) or not parsed:
        raise _malformed(name, raw, allowed)
    return parsed


def _malformed(name: str, raw: str, allowed: str) -> OptionError:
    return OptionError(f"{FORMAT_NAME} option '{name}' must be {allowed}; got {raw!r}.")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _other_partition(name: str, raw: str, topic: str, partition: object) -> OptionError:
    return OptionError(
        f"{FORMAT_NAME} option '{name}' names partition {partition} of topic {topic!r}; a "
        f"{FORMAT_NAME} topic has exactly one partition, {PARTITION}. Name partition "
        f'"{PARTITION}" only (or give the topic\'s value directly); got {raw!r}.'
    )


def per_topic(name: str, raw: str, what: str) -> tuple[tuple[str, int], ...]:
    """``{"t": n}`` or Kafka's ``{"t": {"0": n}}`` -> sorted ``((topic, n), ...)``.

    ``what`` is ``offset`` or ``timestamp``: ``n`` >= 0, or -2 (earliest) or
    -1 (latest). Which sentinels a particular option allows is its caller's check.
    """
    example = 42 if what == "offset" else 1700000000000
    allowed = (
        f'a JSON object of topic to {what}, like {{"clicks": {example}}} or Kafka\'s '
        f'{{"clicks": {{"0": {example}}}}} (-2 = earliest, -1 = latest)'
    )
    parsed = _loads_object(name, raw, allowed)
    pairs = []
    for topic, value in parsed.items():
        if isinstance(value, dict):
            if not value:
                raise _malformed(name, raw, allowed)
            for partition in value:
                if partition != str(PARTITION):
                    raise _other_partition(name, raw, topic, partition)
            value = value[str(PARTITION)]
        if not _is_int(value) or (value < 0 and value not in (EARLIEST_SENTINEL, LATEST_SENTINEL)):
            raise _malformed(name, raw, allowed)
        pairs.append((topic, value))
    return tuple(sorted(pairs))


def assign(name: str, raw: str) -> tuple[str, ...]:
    """Kafka's ``{"t": [0], "u": [0]}`` -> ``("t", "u")``."""
    allowed = 'a JSON object of topic to partition list, like {"clicks": [0]}'
    parsed = _loads_object(name, raw, allowed)
    topics = []
    for topic, partitions in parsed.items():
        if not isinstance(partitions, list) or not partitions:
            raise _malformed(name, raw, allowed)
        for partition in partitions:
            if not _is_int(partition):
                raise _malformed(name, raw, allowed)
            if partition != PARTITION:
                raise _other_partition(name, raw, topic, partition)
        if not topic:
            raise _malformed(name, raw, allowed)
        topics.append(topic)
    return tuple(sorted(topics))
