"""The one way events enter a topic's log: :func:`write_events`.

Every write path (``Store.publish`` and ``publish_many``, the producer's
batches, the Spark sink's chunks and routed rows) opens the topic with
:func:`open_log` in its write transaction and hands :func:`write_events`
columns of stored-form rows; the paths only shape rows. A rule every event
obeys (the payload limit, dense offsets and ``next_offset``, time marks) is
written here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from spark_queue.errors import CorruptStoreError, StoreError
from spark_queue.store.file.connection import one_row
from spark_queue.store.file.names import validate_name
from spark_queue.store.file.payload_limits import check_sizes, topic_fix
from spark_queue.store.streams import packed_insert, time_marks, topic_creation, topic_schemas


class TopicLog:
    """A topic opened for writing in the caller's transaction: what :func:`write_events`
    needs to know, kept up to date by it (``next_offset``, ``unmarked_from``)."""

    __slots__ = ("name", "tid", "next_offset", "limit", "unmarked_from", "schema")

    def __init__(
        self, name: str, tid: int, next_offset: int, limit: int | None, unmarked_from: int
    ) -> None:
        self.name = name
        self.tid = tid
        self.next_offset = next_offset
        self.limit = limit  # max_payload_bytes, or None
        # The first offset past the newest time mark (the topic's first event, or its
        # next offset, when it has no marks): the tail a lookup scans.
        self.unmarked_from = unmarked_from
        self.schema: topic_schemas.TopicCheck | None = None  # the topic's schema, if it has one


def open_log(conn: apsw.Connection, topic: str) -> TopicLog:
    """Open ``topic`` for writing, creating it if missing and the store creates topics on
    publish (:mod:`~spark_queue.store.streams.topic_creation`, else UnknownTopicError); the
    caller holds the write lock.

    One statement when the topic exists. Events another SQLite client
    inserted at or above the topic's ``next_offset`` raise CorruptStoreError:
    appending would collide with them (a raw ConstraintError) or, past a gap,
    leave a hole.
    """
    validate_name(topic)
    log = TopicLog(topic, 0, 0, None, 0)
    _read_row(conn, log)
    return log


def _read_row(conn: apsw.Connection, log: TopicLog) -> None:
    """Fill ``log`` from its topic's row as the caller's transaction sees it (see open_log)."""
    topic = log.name
    row = conn.execute(_OPEN, (topic,)).fetchone()
    if row is None:
        # A publish's create: refused while the store creates topics only when asked.
        topic_creation.create(conn, topic, asked=False)
        row = one_row(conn.execute(_OPEN, (topic,)))
    tid, nxt, limit, stray, unmarked_from = row
    if stray is not None:
        raise CorruptStoreError(
            f"topic {topic!r} holds events at offsets {span(nxt, stray)}, at or above its "
            f"next_offset {nxt}: another SQLite client inserted them without advancing "
            "sq_topics.next_offset, and publishing now would collide with them. Nothing was "
            "published. Run `sqliteq check`; if those events are wanted, set next_offset to "
            f"{stray + 1} (UPDATE sq_topics SET next_offset = {stray + 1} WHERE name = "
            f"'{topic}'), else delete them; foreign clients publish through the sq_publish view."
        )
    log.tid, log.next_offset, log.limit, log.unmarked_from = tid, nxt, limit, unmarked_from
    log.schema = topic_schemas.check_for(conn, tid)


# The topic's row; the highest offset at or above its next_offset (one index
# probe: such rows were inserted by a client that did not advance it); and
# where the unmarked tail starts (the newest mark's end, else the first event).
_NEXT = "SELECT next_offset, name FROM sq_topics WHERE id = ?"
_OPEN = (
    "SELECT id, next_offset, max_payload_bytes, (SELECT offset FROM sq_events "
    "WHERE topic_id = t.id AND offset >= t.next_offset ORDER BY offset DESC LIMIT 1), "
    "coalesce((SELECT end_offset FROM sq_time_marks WHERE topic_id = t.id "
    "ORDER BY offset DESC LIMIT 1), (SELECT offset FROM sq_events WHERE topic_id = t.id "
    "ORDER BY offset LIMIT 1), t.next_offset) "
    "FROM sq_topics AS t WHERE name = ?"
)


def write_events(
    conn: apsw.Connection, log: TopicLog, values: Sequence[Any],
    value_types: int | Sequence[int], ts_ms: int | Sequence[int],
    keys: Sequence[str | bytes | None] | None = None, headers: Sequence[str | None] | None = None,
    *, rows: int | Sequence[int] = 0, current: bool = False,
    checked: topic_schemas.CheckedAgainst | None = None,
    originals: Sequence[Any] | None = None,
) -> int:
    """Store stored-form events at ``log``'s next offsets; return the new next offset.

    In order: the topic's payload limit (a value over it raises
    PayloadTooLargeError naming its row: ``rows`` is the batch position of the
    first value, or of each), the insert (one statement per chunk, see
    :mod:`~spark_queue.store.streams.packed_insert`), ``next_offset``, and the
    time marks, written once the unmarked tail holds :data:`~time_marks.RUN`
    events. ``value_types`` and ``ts_ms`` are one value for every row or one
    per row; ``keys`` and ``headers`` None (all NULL) or one per row. The
    caller holds the write lock and opened ``log`` in the same transaction;
    an error leaves the transaction to its rollback. ``checked``: the values
    were all checked against that schema version where they were encoded
    (``TopicSchema.all_fit``); the schema's check is skipped only when it is
    the topic's current version. ``originals``: the Python objects the
    values were encoded from (the codec's ``json.dumps``), one per value, which
    the check then reads as given when it can (``ValueCheck.fits_objects``),
    saving the parse of the stored text.
    """
    # Dense offsets: the first offset is the table's next_offset as this transaction sees
    # it. A kept log can be behind the table: a savepoint rolled back a publish, or the
    # caller's SQL, a trigger or a foreign writer in the same transaction wrote the topic
    # (tests/store/streams/test_dense_offsets.py); then the row is read again (its limit,
    # the stray probe, the time marks' tail). Only a caller that proved the log current in
    # this transaction skips the look (``current``: Store.publish, see publish_one.py).
    if not current:
        row = conn.execute(_NEXT, (log.tid,)).fetchone()
        if row is None or tuple(row) != (log.next_offset, log.name):
            _read_row(conn, log)
    if log.limit is not None:
        check_sizes(values, log.limit, f"topic {log.name!r}", topic_fix(log.name), rows)
    # SchemaMismatchError naming the row and field, or quarantine; not again for values the
    # writer checked against this very version (tests/store/streams/test_checked_chunks.py).
    if (log.schema is not None and not log.schema.checked_by(checked)
            and not log.schema.fit_as_given(originals)):
        kept = log.schema.hold(conn, log.name, log.tid, log.next_offset,
                               (values, value_types, ts_ms, keys, headers), rows)
        if kept is not None:
            values, value_types, ts_ms, keys, headers = kept
    first = log.next_offset
    try:
        end = packed_insert.insert_events(
            conn, log.tid, first, values, value_types, ts_ms, keys, headers
        )
    except apsw.ConstraintError as exc:
        _read_row(conn, log)  # raises CorruptStoreError naming the stray events, if any
        raise StoreError(
            f"topic {log.name!r}: the store refused the events at offset {first} ({exc}); "
            "nothing was published. Run `sqliteq check` on the store."
        ) from exc
    if end == first:
        return end
    conn.execute("UPDATE sq_topics SET next_offset = ? WHERE id = ?", (end, log.tid))
    log.next_offset = end
    # Per write, not per event: a single publish costs no mark statement until a run fills.
    if end - log.unmarked_from >= time_marks.RUN:
        newest = ts_ms if isinstance(ts_ms, int) else max(ts_ms)
        time_marks.mark(conn, log.tid, log.unmarked_from, first, end, newest)
        log.unmarked_from = end
    return end


def span(low: int, high: int) -> str:
    """``low..high`` for an error message, or one offset."""
    return str(low) if low == high else f"{low}..{high}"


def write_columns(
    conn: apsw.Connection, log: TopicLog, ts_ms: int, values: Sequence[Any],
    value_types: Sequence[int], keys: Sequence[str | bytes | None],
    headers: Sequence[str | None],
) -> int:
    """:func:`write_events` of per-row columns (a producer's calls), each column passed in
    its compact form: one value type when all rows share it, no keys or headers when every
    row has none, so the insert binds the fewest columns."""
    return write_events(
        conn, log, values,
        value_types[0] if value_types.count(value_types[0]) == len(value_types) else value_types,
        ts_ms, None if keys.count(None) == len(keys) else keys,
        None if headers.count(None) == len(headers) else headers,
    )
