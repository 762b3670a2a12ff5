"""Topics: append-only logs with dense offsets, and the paths events are written by.

Offsets are dense per topic: the first event is 0 and each next one is +1,
assigned inside the writing transaction. SQLite lets one writer in at a time,
so a reader never sees offset N+1 while N is invisible (no holes, no late
fills); ``tests/store/streams/test_concurrency.py`` guards this with several processes.
This module shapes rows for :func:`~spark_queue.store.streams.event_log.write_events`;
reads are in :mod:`spark_queue.store.streams.topic_reads`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import attrgetter
from typing import Any, NamedTuple

import apsw

from spark_queue.errors import PayloadError
from spark_queue.store.file import carray
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.codec import (
    BYTES,
    TEXT,
    VALUE_TYPE_NAMES,
    encode_headers,
    encode_key,
    encode_value,
)
from spark_queue.store.file.connection import now_ms
from spark_queue.store.streams import topic_creation, topic_reads
from spark_queue.store.streams.event_log import (
    TopicLog,
    open_log,
    write_columns,
    write_events,
)
from spark_queue.store.streams.topic_schemas import CheckedAgainst


@dataclass(frozen=True, slots=True)
class Record:
    """One event to publish, when a key, headers or a timestamp go with the value."""

    value: Any
    key: str | bytes | None = None
    headers: Mapping[str, str] | None = None
    timestamp_ms: int | None = None


def ensure_topic(conn: apsw.Connection, topic: str) -> tuple[int, int]:
    """Create ``topic`` if missing, asked (whatever the store's create_topics_on_publish:
    :mod:`~spark_queue.store.streams.topic_creation`); the caller holds the write lock.
    Returns (id, next_offset)."""
    if topic_reads.find_id(conn, topic) is None:
        topic_creation.create(conn, topic, asked=True)
    return open_topic(conn, topic)[:2]


def open_topic(conn: apsw.Connection, topic: str) -> tuple[int, int, int | None]:
    """:func:`ensure_topic` plus the topic's ``max_payload_bytes``: ``(id, next_offset,
    limit)`` of :func:`~spark_queue.store.streams.event_log.open_log`, which also refuses
    events another client left above ``next_offset``."""
    log = open_log(conn, topic)
    return log.tid, log.next_offset, log.limit


_Column = Sequence[Any] | None
#: A chunk in stored form: values, their value type (one for all, or one each), their
#: timestamp (likewise), keys and headers (None: all None).
_Columns = tuple[Sequence[Any], int | Sequence[int], int | Sequence[int], _Column, _Column]
#: One event in stored form: value, value type, timestamp, key, headers.
_StoredEvent = tuple[Any, int, int, str | bytes | None, str | None]


def _encode_chunk(items: list[Any], index: int, ts_ms: int) -> _Columns:
    """``(values, value_types, ts_ms, keys, headers)`` of ``items`` in their stored form.

    Plain ASCII text is the hot case (the benchmark's and Spark's): the whole
    chunk passes as is after two C-speed scans, with no call per item.
    ``index`` is the chunk's first item in the batch, for error messages.
    """
    kinds = set(map(type, items))
    if kinds == {str} and all(map(str.isascii, items)):
        return items, TEXT, ts_ms, None, None
    if kinds == {Record}:
        plain = _plain_records(items, ts_ms)
        if plain is not None:
            return plain
    rows = []
    for position, item in enumerate(items, start=index):
        try:
            rows.append(_encode(item, ts_ms))
        except PayloadError as exc:
            raise PayloadError(f"item {position} of the batch: {exc}") from exc
    values, vtypes, stamps, keys, headers = (list(column) for column in zip(*rows, strict=True))
    return (
        values,
        vtypes[0] if vtypes.count(vtypes[0]) == len(vtypes) else vtypes,
        ts_ms if stamps.count(ts_ms) == len(stamps) else stamps,
        None if keys.count(None) == len(keys) else keys,
        None if headers.count(None) == len(headers) else headers,
    )


_VALUE, _KEY = attrgetter("value"), attrgetter("key")
_HEADERS, _TIMESTAMP = attrgetter("headers"), attrgetter("timestamp_ms")
_NONE = type(None)


def _plain_records(records: list[Record], ts_ms: int) -> _Columns | None:
    """:func:`_encode_chunk` of Records whose values are all ASCII text or all bytes, keys
    ASCII text, bytes or None, with no headers or timestamps (a keyed stream, as Kafka
    producers send): read column by column at C speed. None for any other chunk, which
    then goes record by record."""
    n = len(records)
    if (list(map(_HEADERS, records)).count(None) != n
            or list(map(_TIMESTAMP, records)).count(None) != n):
        return None
    values = list(map(_VALUE, records))
    value_kinds = set(map(type, values))
    if value_kinds == {str}:
        if not all(map(str.isascii, values)):
            return None
        value_type = TEXT
    elif value_kinds == {bytes}:
        value_type = BYTES
    else:
        return None
    keys = list(map(_KEY, records))
    key_kinds = set(map(type, keys))
    if not key_kinds <= {str, bytes, _NONE}:
        return None
    if str in key_kinds and not all(k.isascii() for k in keys if type(k) is str):
        return None
    return values, value_type, ts_ms, None if key_kinds == {_NONE} else keys, None


def _encode(item: Any, ts_ms: int) -> _StoredEvent:
    if type(item) is Record:
        value, vtype = encode_value(item.value)
        return (
            value,
            vtype,
            ts_ms if item.timestamp_ms is None else check_int(item.timestamp_ms, "timestamp_ms"),
            encode_key(item.key),
            encode_headers(item.headers),
        )
    value, vtype = encode_value(item)
    return (value, vtype, ts_ms, None, None)


def append(conn: apsw.Connection, topic: str, items: Iterable[Any]) -> range:
    """Append ``items`` (values or Records) at the topic's next offsets.

    The caller holds the write lock.

    Returns the assigned offsets. Items are encoded and written a chunk of
    :data:`~spark_queue.store.file.carray.CHUNK` at a time through
    :func:`~spark_queue.store.streams.event_log.write_events`, so a large
    batch is never copied whole. A value over the topic's
    ``max_payload_bytes`` raises :class:`PayloadTooLargeError` naming its row
    (the caller's transaction then stores nothing).
    """
    log = open_log(conn, topic)
    first = log.next_offset
    ts_ms = now_ms()
    source = iter(items)
    while chunk := list(islice(source, carray.CHUNK)):
        row = log.next_offset - first
        values, vtypes, stamps, keys, headers = _encode_chunk(chunk, row, ts_ms)
        # Dicts as given: the schema's check may read them rather than parse their text.
        originals = chunk if log.schema is not None and set(map(type, chunk)) == {dict} else None
        write_events(conn, log, values, vtypes, stamps, keys, headers, rows=row,
                     originals=originals)
    return range(first, log.next_offset)


class EncodedChunk(NamedTuple):
    """Columns of events already in their stored form (see :mod:`spark_queue.store.file.codec`).

    The Spark sink encodes on the executors and hands the driver these
    columns; :func:`append_encoded` zips them straight into SQLite, so no
    per-row object is built besides the row tuple itself. ``topics`` is used
    only by :func:`append_routed`.
    """

    values: Sequence[Any]
    value_type: int
    keys: Sequence[str | bytes | None] | None = None
    headers: Sequence[str | None] | None = None
    topics: Sequence[str | None] | None = None
    # The topic's schema version every value was checked against where it was encoded
    # (TopicSchema.checked), or None: the commit checks them (append_encoded only).
    checked: CheckedAgainst | None = None


def append_encoded(
    conn: apsw.Connection, topic: str, chunks: Iterable[EncodedChunk], *, ts_ms: int | None = None
) -> range:
    """Append pre-encoded chunks at the topic's next offsets; caller holds the write lock.

    Returns the assigned offsets. Each chunk goes in as it is, one statement
    per :data:`~spark_queue.store.file.carray.CHUNK` rows: nothing
    is copied into an intermediate list. A value over the topic's
    ``max_payload_bytes`` raises :class:`PayloadTooLargeError` naming its row
    in the whole batch.
    """
    log = open_log(conn, topic)
    first = log.next_offset
    ts = now_ms() if ts_ms is None else int(ts_ms)
    for chunk in chunks:
        _check_columns(chunk, chunk.keys, chunk.headers, what="keys or headers")
        write_events(conn, log, chunk.values, chunk.value_type, ts, chunk.keys, chunk.headers,
                     rows=log.next_offset - first, checked=chunk.checked)
    return range(first, log.next_offset)


def _check_columns(chunk: EncodedChunk, *columns: Sequence[Any] | None, what: str) -> None:
    """PayloadError unless ``chunk``'s value type is known and ``columns`` (None or one
    entry per row) match its values in length."""
    if chunk.value_type not in VALUE_TYPE_NAMES:
        raise PayloadError(f"unknown value_type {chunk.value_type!r} in a chunk")
    n = len(chunk.values)
    for column in columns:
        if column is not None and len(column) != n:
            raise PayloadError(
                f"a chunk holds {n} values but {len(column)} {what}; "
                "every column of a chunk needs one entry per row."
            )


def insert_stored(
    conn: apsw.Connection, log: TopicLog, ts_ms: int, rows: Sequence[tuple[Any, ...]]
) -> int:
    """Write ``rows`` of stored ``(value, value_type, key, headers)`` at ``log``'s next
    offsets; return the new next offset (the producer's batch of one topic).

    The caller holds the write lock and opened ``log`` with
    :func:`~spark_queue.store.streams.event_log.open_log` in the same
    transaction. The rows are turned into columns (one C-speed transpose) for
    :func:`~spark_queue.store.streams.event_log.write_events`: one statement
    per chunk, where ``executemany`` steps (and hands the GIL to other
    threads) once per row.
    """
    if not rows:
        return log.next_offset
    values, vtypes, keys, headers = zip(*rows, strict=True)
    return write_columns(conn, log, ts_ms, values, vtypes, keys, headers)


def append_routed(
    conn: apsw.Connection, chunks: Iterable[EncodedChunk], *, ts_ms: int | None = None
) -> dict[str, range]:
    """Append pre-encoded rows, each to the topic in ``chunk.topics``; caller holds the write lock.

    Topics are created on first use. Returns each topic's assigned offsets
    (consecutive per topic in row order, as in :func:`append`). A null or
    invalid topic name, or a value over its topic's ``max_payload_bytes`` (the
    error names the row's position in the whole batch), raises and, with the
    caller's transaction, stores nothing. Each chunk's rows are grouped by
    topic and go in as one statement per topic, as :func:`append_encoded`'s do.
    """
    ts = now_ms() if ts_ms is None else int(ts_ms)
    logs: dict[str, tuple[TopicLog, int]] = {}  # topic -> (its log, its first offset)
    position = 0  # of the chunk's first row in the whole batch
    for chunk in chunks:
        if chunk.topics is None:
            raise PayloadError("append_routed needs chunk.topics (one topic per row).")
        _check_columns(chunk, chunk.topics, chunk.keys, chunk.headers,
                       what="topics, keys or headers")
        rows_of: dict[str, list[int]] = {}
        for row, topic in enumerate(chunk.topics):
            if topic is None:
                raise PayloadError(
                    "a row has a null topic; every row needs its topic column set "
                    "(or set the sink's 'topic' option)."
                )
            rows = rows_of.get(topic)
            if rows is None:
                rows = rows_of[topic] = []
                if topic not in logs:
                    log = open_log(conn, topic)
                    logs[topic] = (log, log.next_offset)
            rows.append(row)
        whole = len(rows_of) == 1
        for topic, rows in rows_of.items():
            log = logs[topic][0]
            values, keys, headers = _rows(chunk, rows, whole=whole)
            write_events(  # each row's batch position is needed only to name one over a limit
                conn, log, values, chunk.value_type, ts, keys, headers,
                rows=position if whole or log.limit is None else [position + r for r in rows],
            )
        position += len(chunk.values)
    return {topic: range(first, log.next_offset) for topic, (log, first) in logs.items()}


def _rows(
    chunk: EncodedChunk, rows: list[int], *, whole: bool
) -> tuple[Sequence[Any], _Column, _Column]:
    """The values, keys and headers of ``rows`` of ``chunk`` (the chunk's own when ``whole``)."""
    def pick(column: _Column) -> _Column:
        if column is None or whole:
            return column
        return [column[row] for row in rows]

    values = chunk.values if whole else [chunk.values[row] for row in rows]
    return values, pick(chunk.keys), pick(chunk.headers)
