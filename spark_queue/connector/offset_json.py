"""The JSON forms the source reads: its options' (Kafka's and the flat one) and its offsets'.

Kafka names a position per topic *partition*: ``{"clicks": {"0": 42}}``; a
``sqliteq`` topic is one partition, 0, so ``{"clicks": 42}`` says the same
and is accepted too. Any partition other than 0 is an error naming it, never
silently read as 0. ``-2`` means earliest and ``-1`` latest, in offsets and
in timestamps alike (as in Kafka's ``ListOffsets``). ``assign`` is Kafka's
``{"clicks": [0]}``.

A streaming source's offsets are :class:`SourceOffset`: parsed once where Spark hands them
back (the reader methods Spark calls), planned with as a typed value, and handed back to
Spark by :meth:`SourceOffset.to_spark` in the very JSON form every release wrote. This
module is the only one that knows their reserved keys (``tests/connector/
test_offset_keys.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import CheckpointError, OptionError

if TYPE_CHECKING:
    from spark_queue.store import Fingerprint

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


@dataclass(frozen=True)
class SourceOffset:
    """A streaming source's offset: ``{topic: next_offset}`` of one store file, with the
    store's identity (``@store``), the fingerprint of the last event read per topic
    (``@last``) and the query's id (``@reader``); each None or empty in offsets written
    before it. Frozen and hashable: the history guard remembers offsets by it."""

    topics: tuple[tuple[str, int], ...] = ()  # sorted by topic
    store: str | None = None
    last: tuple[tuple[str, Fingerprint], ...] = ()  # sorted by topic
    reader: str | None = None

    @classmethod
    def of(
        cls, positions: Mapping[str, int], store: str | None = None,
        marks: Mapping[str, Fingerprint] | None = None, reader: str | None = None,
    ) -> SourceOffset:
        return cls(tuple(sorted(positions.items())), store,
                   tuple(sorted((marks or {}).items())), reader)

    @property
    def positions(self) -> dict[str, int]:
        """``{topic: next_offset}``, sorted by topic."""
        return dict(self.topics)

    @property
    def marks(self) -> dict[str, Fingerprint]:
        """``{topic: fingerprint of the event before its position}``."""
        return dict(self.last)

    @classmethod
    def from_spark(cls, raw: object) -> SourceOffset:
        """``raw`` as Spark hands it back (from a checkpoint or from this process): this
        source's form, else OptionError naming another source (Kafka's ``{"t": {"0": n}}``
        says where events sit in Kafka's log, not in a store file:
        ``tests/connector/source/test_foreign_checkpoints.py``); fingerprints this source
        never writes are a CheckpointError."""
        parsed = _topics_and_store(raw)
        if parsed is None:
            raise _foreign(raw)
        assert isinstance(raw, dict), "_topics_and_store takes dicts only"
        reader = raw.get(READER_KEY)
        return cls(tuple(sorted(parsed[0].items())), parsed[1], _marks(raw.get(LAST_READ_KEY)),
                   reader if isinstance(reader, str) else None)

    @classmethod
    def from_log(cls, raw: object) -> SourceOffset | None:
        """A line of a checkpoint's ``offsets/N`` log read as this source's offsets (no
        fingerprints: a reader of the log needs positions only), or None: another
        source's."""
        parsed = _topics_and_store(raw)
        return None if parsed is None else cls(tuple(sorted(parsed[0].items())), parsed[1])

    @classmethod
    def from_report(cls, value: object) -> SourceOffset | None:
        """Offsets as a streaming query's progress report shows them (parsed from its text),
        or None when they are not this source's form. A topic reported as null (a named
        topic that does not exist yet) has no position and is left out; fingerprints are
        not read."""
        if not isinstance(value, Mapping):
            return None
        topics = {key: offset for key, offset in value.items() if key not in RESERVED_KEYS}
        if not all(offset is None or (isinstance(offset, int) and not isinstance(offset, bool))
                   for offset in topics.values()):
            return None
        store, reader = value.get(STORE_KEY), value.get(READER_KEY)
        return cls(tuple(sorted((str(t), int(o)) for t, o in topics.items() if o is not None)),
                   store if isinstance(store, str) else None,
                   reader=reader if isinstance(reader, str) else None)

    def to_spark(self) -> dict[str, Any]:
        """The offset as handed to Spark, key for key what every release wrote (Spark
        compares offsets by their JSON text): the query's id, the store's identity, the
        fingerprints, then each topic, sorted."""
        offsets: dict[str, Any] = {} if self.reader is None else {READER_KEY: self.reader}
        if self.store is not None:
            offsets[STORE_KEY] = self.store
        if self.last:
            offsets[LAST_READ_KEY] = {topic: list(mark) for topic, mark in self.last}
        offsets.update(self.topics)
        return offsets


def _topics_and_store(raw: object) -> tuple[dict[str, int], str | None] | None:
    """``({topic: offset}, store identity)`` of this source's offsets, or None."""
    if not isinstance(raw, dict):
        return None
    store = raw.get(STORE_KEY)
    topics = {key: value for key, value in raw.items() if key not in RESERVED_KEYS}
    if (store is None or isinstance(store, str)) and all(
        isinstance(topic, str) and type(offset) is int and offset >= 0
        for topic, offset in topics.items()
    ):
        return topics, store
    return None


def _marks(raw: object) -> tuple[tuple[str, Fingerprint], ...]:
    if raw is None:
        return ()
    # Imported here, not with the module: the option modules load without the store.
    from spark_queue.store import Fingerprint

    marks = []
    if isinstance(raw, dict):
        for topic, mark in raw.items():
            if not (isinstance(mark, list) and len(mark) == 3
                    and all(type(v) is int for v in mark[:2]) and isinstance(mark[2], str)):
                break
            marks.append((topic, Fingerprint(*mark)))
        else:
            return tuple(sorted(marks))
    raise CheckpointError(
        f"{FORMAT_NAME} source: the checkpoint's offsets hold {LAST_READ_KEY!r} = {raw!r}, "
        "which this source never writes (it writes {topic: [offset, ts_ms, digest]}): the "
        "offsets log was edited or damaged. Give the query a new checkpointLocation."
    )


def _foreign(raw: object) -> OptionError:
    kafka = isinstance(raw, dict) and any(isinstance(v, dict) for v in raw.values())
    return OptionError(
        f"{FORMAT_NAME} source: the checkpoint holds the offsets {raw!r}, which this source "
        "never writes"
        + (" (Kafka's per-partition form {\"topic\": {\"0\": offset}})" if kafka else "")
        + ": the checkpoint was written by another source. Offsets of another source do not "
        "say where its events sit in a store file, so a pipeline swapped to "
        f"format(\"{FORMAT_NAME}\") needs a new checkpoint location (checkpointLocation); "
        "choose where it starts with startingOffsets."
    )


def _loads_object(name: str, raw: str, allowed: str) -> dict[str, Any]:
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
