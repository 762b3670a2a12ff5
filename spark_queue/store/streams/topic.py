"""The :class:`Topic` handle: one named topic of one :class:`~spark_queue.store.Store`.

Its offsets (bounds, a timestamp's offset) and its administration (create, configure,
retention, delete, where a new topic starts, the shift of its Kafka copy). Publishing and
reading stay on the Store, where a batch may name its topic per row. Each method runs in
one transaction of the store's connection, opened here, and says what it guarantees; like
the Store, a handle belongs to one thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from spark_queue.store.file import payload_limits
from spark_queue.store.file.connection import HasStoreConnection, translated
from spark_queue.store.streams import (
    mirrors,
    quarantine,
    retention,
    topic_admin,
    topic_log,
    topic_reads,
    topic_schemas,
)
from spark_queue.store.streams.quarantine import QuarantinedEvent, Replayed
from spark_queue.store.streams.retention import PruneResult
from spark_queue.store.streams.topic_admin import TopicDeleted
from spark_queue.store.streams.topic_reads import TopicInfo
from spark_queue.store.streams.topic_schemas import TopicSchema


@translated
class Topic:
    """A topic (an append-only log) in a store file: its offsets and its settings.

    >>> clicks = store.topic("clicks")                   # doctest: +SKIP
    >>> clicks.configure(retention_ms=7 * 24 * 3600 * 1000)
    >>> earliest, latest = clicks.bounds()

    Making a handle reads and writes nothing; a method on a topic that does not exist
    raises ``UnknownTopicError`` unless it says it creates the topic.
    """

    def __init__(self, store: HasStoreConnection, name: str) -> None:
        self.file = store.file
        self.name = name

    def __repr__(self) -> str:
        return f"Topic({self.file.path!r}, {self.name!r})"

    # -- offsets -------------------------------------------------------------------
    def bounds(self) -> tuple[int, int]:
        """``(earliest, latest)``; latest is the next offset to be assigned (one read)."""
        with self.file.read() as conn:
            return topic_reads.bounds(conn, self.name)

    def earliest_offset(self) -> int:
        """The first offset retention has kept (one read)."""
        return self.bounds()[0]

    def latest_offset(self) -> int:
        """The next offset to be assigned (one read)."""
        return self.bounds()[1]

    def offset_for_timestamp(self, timestamp_ms: int) -> int:
        """The first offset stamped at or after ``timestamp_ms`` (latest if none; one read)."""
        with self.file.read() as conn:
            return topic_reads.offset_for_timestamp(conn, self.name, timestamp_ms)

    def exists(self) -> bool:
        """Whether the topic exists (one read)."""
        with self.file.read() as conn:
            return topic_reads.find_id(conn, self.name) is not None

    # -- administration --------------------------------------------------------------
    def create(self) -> None:
        """Create the topic if it does not exist (one transaction; idempotent)."""
        with self.file.write() as conn:
            topic_log.ensure_topic(conn, self.name)

    def configure(self, *, exist_ok: bool = True, **settings: int | None) -> TopicInfo:
        """Create the topic if missing and set ``retention_ms``, ``retention_rows`` or
        ``max_payload_bytes`` (None clears one; the rest keep their value), in one transaction.

        ``exist_ok=False`` refuses an existing topic with ``TopicExistsError``.
        Returns the topic as it is after the commit.
        """
        with self.file.write() as conn:
            return topic_admin.configure(conn, self.name, settings, exist_ok=exist_ok)

    def set_limits(self, *, max_payload_bytes: int | None) -> None:
        """Set the payload limit in one transaction (None removes it).

        Creates the topic if missing. From the commit on, a publish with a
        value over the limit fails whole with ``PayloadTooLargeError``.
        """
        limit = payload_limits.validate_limit(max_payload_bytes, f"topic {self.name!r}")
        with self.file.write() as conn:
            tid, _ = topic_log.ensure_topic(conn, self.name)
            payload_limits.set_topic_limit(conn, tid, limit)

    def set_schema(
        self, ddl: str, *, on_invalid: str = "reject", compatibility: str = "backward",
    ) -> TopicSchema:
        """Declare the topic's schema in Spark DDL (``'device STRING NOT NULL, temp DOUBLE'``)
        as its next version, creating the topic if missing, in one transaction; returns it.

        From the commit on, every writer (publish, publish_many, the Producer, transactions,
        the Spark sink, ``sqliteq publish``, ``INSERT INTO sq_publish``) refuses a value that
        does not fit with ``SchemaMismatchError``, nothing of its batch written.
        ``compatibility='backward'`` (the default) refuses a change that removes a field,
        changes its type or adds a NOT NULL one (``SchemaCompatibilityError``); ``'none'``
        checks nothing. The same schema again stores nothing. See docs/schemas.md.
        """
        with self.file.write() as conn:
            tid, next_offset, _ = topic_log.open_topic(conn, self.name)
            return topic_schemas.set_schema(conn, tid, self.name, next_offset, ddl,
                                            on_invalid=on_invalid, compatibility=compatibility)

    def schema(self) -> TopicSchema | None:
        """The topic's newest schema version, or None if it has none (one read)."""
        with self.file.read() as conn:
            return topic_schemas.current(conn, self.name)

    def schema_history(self) -> list[TopicSchema]:
        """Every version of the topic's schema, oldest first (one read)."""
        with self.file.read() as conn:
            return topic_schemas.history(conn, self.name)

    def quarantine(self, ids: Sequence[int] | None = None) -> list[QuarantinedEvent]:
        """The events the topic's schema kept out (``on_invalid="quarantine"``), oldest
        first, as their writers gave them, with why (only ``ids`` when given; one read)."""
        with self.file.read() as conn:
            return quarantine.held(conn, self.name, ids)

    def replay_quarantine(self, ids: Sequence[int] | None = None) -> Replayed:
        """Publish the quarantined events that fit the schema now at the topic's next
        offsets and drop them from the quarantine, in one transaction; the others stay."""
        with self.file.write() as conn:
            return quarantine.replay_held(conn, self.name, ids)

    def purge_quarantine(self, ids: Sequence[int] | None = None) -> int:
        """Delete quarantined events (all, or ``ids``) in one transaction; how many."""
        with self.file.write() as conn:
            return quarantine.purge_held(conn, self.name, ids)

    def set_retention(
        self, *, retention_ms: int | None = None, retention_rows: int | None = None,
        **deprecated: int | None,
    ) -> None:
        """Store the topic's default retention limits (used by :meth:`prune` and
        housekeeping), in one transaction: the settings ``retention_ms``, ``retention_rows``
        of :meth:`configure` (deprecated names: ``max_age_ms``, ``max_rows``)."""
        age, rows = retention.retention_limits("set_retention", retention_ms, retention_rows,
                                               deprecated)
        with self.file.write() as conn:
            retention.set_retention(conn, self.name, retention_ms=age, retention_rows=rows)

    def prune(
        self, *, retention_ms: int | None = None, retention_rows: int | None = None,
        force: bool = False, at_ms: int | None = None, **deprecated: int | None,
    ) -> list[PruneResult]:
        """Apply retention (``retention_ms``, ``retention_rows`` given, else the topic's own)
        in write transactions of at most 10,000 events and 8 MiB each; never at or above the
        lowest saved consumer offset unless ``force``. Every topic at once:
        ``store.housekeeping.prune()``."""
        age, rows = retention.retention_limits("prune", retention_ms, retention_rows, deprecated)
        return retention.prune(self.file, self.name, retention_ms=age, retention_rows=rows,
                               force=force, at_ms=at_ms)

    def start_at(self, offset: int) -> None:
        """Create the topic empty, its first event to get ``offset`` (as if retention had
        removed the events before it), in one transaction; idempotent for that offset.
        A topic that holds or held events is refused (TopicExistsError)."""
        with self.file.write() as conn:
            topic_admin.start_at(conn, self.name, offset)

    def delete(self) -> TopicDeleted:
        """Delete the topic with its events and its consumers' saved offsets (one transaction).

        Readers of the topic fail from the commit on (``UnknownTopicError``); a
        publish creates it anew from offset 0. Sink-ledger entries, keyed by
        sink id, stay.
        """
        with self.file.write() as conn:
            return topic_admin.delete(conn, self.name)

    # -- its Kafka copy (spark_queue/kafka/export.py) ---------------------------------
    def mirror_shift(self) -> int | None:
        """The fixed shift of the topic's exported copy (copy offset = store offset - shift),
        or None if it was never exported (one read)."""
        with self.file.read() as conn:
            return mirrors.shift(conn, self.name)

    def fix_mirror_shift(self, shift: int) -> int:
        """Record ``shift`` for the topic's copy unless one is recorded, in one transaction;
        returns the recorded shift (the first export's, for good)."""
        with self.file.write() as conn:
            return mirrors.fix_shift(conn, self.name, shift)
