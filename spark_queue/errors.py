"""One exception hierarchy for the whole project.

Every error the project raises on purpose derives from :class:`SparkQueueError`
and mixes in the builtin that fits, so callers can catch either. Messages stand
alone: Spark wraps connector exceptions and only the text reaches the user, so
each names what was wrong, the value, and what to do.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class SparkQueueError(Exception):
    """Base class of every error raised by spark_queue."""


class StoreError(SparkQueueError):
    """The store file cannot be used as asked."""


class StoreClosedError(StoreError):
    """The Store (or the Queue on it) was closed; open a new one."""


class StoreNotFoundError(StoreError, FileNotFoundError):
    """The store file does not exist and creating it was not allowed."""


class StoreNotCreatedError(StoreNotFoundError):
    """The file exists but holds no store yet (empty), and it was opened read-only."""


class UnsafeFileSystemError(StoreError):
    """The store file's directory is on a file system that cannot keep SQLite's locks or
    shared memory (a network file system, cloud storage through FUSE, no-op locks)."""


class NotAStoreError(StoreError):
    """The file is not SQLite, or is SQLite but not a spark_queue store."""


class SchemaVersionError(StoreError):
    """The file was written by a newer spark_queue than this one."""


class StoreBusyError(StoreError, TimeoutError):
    """Another connection held the write lock past the busy timeout."""


class StoreFullError(StoreError, OSError):
    """The disk (or the file's page limit) is full; the transaction was rolled back."""


class ReadOnlyStoreError(StoreError, PermissionError):
    """A write to a store opened read-only, or whose file or directory cannot be written."""


class TransactionOpenError(StoreError):
    """A Store or Queue call that writes was made while a transaction is open on the same
    connection (``store.transaction()``, ``store.write()``, a handler's ``job.transaction``);
    inside one, write through the transaction's own methods."""


class TransactionClosedError(StoreError):
    """A transaction's method was called after its block ended (committed or rolled back),
    or the block's transaction was ended by SQL of its own (``COMMIT``, ``ROLLBACK``)."""


class CorruptStoreError(StoreError):
    """SQLite found the file damaged; ``sqliteq check`` and a backup restore are the way out."""


class ArgumentError(SparkQueueError, ValueError):
    """An argument is outside what is allowed: an integer beyond its range (a store keeps
    64-bit integers), a negative count. The base of the argument errors below."""


class InvalidNameError(ArgumentError):
    """A topic, queue or consumer name breaks the naming rule."""


class PayloadError(SparkQueueError, ValueError):
    """A value, key or header cannot be stored as JSON text, text or bytes."""


class PayloadTooLargeError(PayloadError):
    """A payload is larger than its queue's or topic's ``max_payload_bytes``; nothing was stored."""


class SchemaMismatchError(PayloadError):
    """An event does not fit its topic's schema; the message names the topic, the field, the
    expected type and what the value held (docs/schemas.md)."""


class SchemaDdlError(ArgumentError):
    """A topic's schema is not Spark DDL of the supported subset; the message names the
    position."""


class SchemaCompatibilityError(ArgumentError):
    """A topic's new schema breaks its compatibility rule; the message names the field and
    the rule."""


class SchemaChangedError(SparkQueueError, ValueError):
    """A topic's schema changed under a query that reads it with ``valueSchema=topic``; the
    message names both versions, and starts with :meth:`marker`, which :meth:`change_in`
    reads back out of any text that holds it (Spark wraps the error in its own, so a
    supervisor has the text only: ``spark_queue.spark.follow_schema``)."""

    # Stable across releases: supervisors match it in StreamingQueryException's text.
    _MARKER = re.compile(
        r"\[sqliteq-schema-changed topic=([A-Za-z0-9_.\-]+) from=(\d+) to=(\d+) "
        r"compatibility=(backward|none)\]")

    @staticmethod
    def marker(change: SchemaChange) -> str:
        """The tag a message starts with: ``[sqliteq-schema-changed topic=t from=1 to=2
        compatibility=backward]``."""
        return (f"[sqliteq-schema-changed topic={change.topic} from={change.from_version} "
                f"to={change.to_version} compatibility={change.compatibility}]")

    @classmethod
    def change_in(cls, text: str) -> SchemaChange | None:
        """The change a :meth:`marker` in ``text`` names, or None where it holds none."""
        found = cls._MARKER.search(text)
        if found is None:
            return None
        topic, old, new, compatibility = found.groups()
        return SchemaChange(topic, int(old), int(new), compatibility)


class SchemaChange(NamedTuple):
    """A topic's schema moving under a query: from the version it reads to the first newer
    one with other columns; ``compatibility`` is ``backward`` when every newer version was
    checked backward compatible when set (events of every version read in the newest
    version's columns), ``none`` otherwise."""

    topic: str
    from_version: int
    to_version: int
    compatibility: str

    @property
    def backward(self) -> bool:
        return self.compatibility == "backward"


class OffsetRangeError(ArgumentError):
    """An offset or offset range is negative, inverted or otherwise invalid."""


class UnknownTopicError(SparkQueueError, LookupError):
    """The named topic does not exist in the store."""


class TopicExistsError(SparkQueueError, ValueError):
    """A topic asked to be created new already exists."""


class UnknownConsumerError(SparkQueueError, LookupError):
    """The named consumer has no saved offsets (for the topic asked about)."""


class DataLossError(SparkQueueError, LookupError):
    """Offsets that were asked for have been removed by retention."""


class OptionError(ArgumentError):
    """A connector or CLI option has a value outside what is allowed."""


class UnknownQueueError(SparkQueueError, LookupError):
    """The named queue does not exist in the store."""


class UnknownJobError(SparkQueueError, LookupError):
    """No job (or dead letter) with that id exists in the queue."""


class QueueConfigError(ArgumentError):
    """A queue setting or job option is outside what is allowed."""


class StaleLeaseError(SparkQueueError, LookupError):
    """The lease token presented no longer holds the job (it expired and was re-claimed,
    or the job was acked, released or removed); nothing was changed."""


class QueueFullError(SparkQueueError, TimeoutError):
    """The queue is at its ``max_size`` and stayed full for as long as the caller would wait."""


class QueueBatchTooLargeError(QueueFullError, ValueError):
    """A batch has more jobs than the queue's ``max_size``: it could never fit."""


class SinkSchemaError(SparkQueueError, ValueError):
    """The DataFrame given to the ``sqliteq`` sink has no usable column, or one of a wrong type."""


class WorkerCrashedError(SparkQueueError, RuntimeError):
    """A worker's slot or heartbeat thread died; the worker stopped and released its leases.

    ``stats`` holds what the run did before it stopped.
    """

    def __init__(self, message: str, stats: object = None) -> None:
        super().__init__(message)
        self.stats = stats


class CheckpointError(SparkQueueError, ValueError):
    """A Spark checkpoint directory holds no position this source wrote (missing, empty,
    another source's offsets, several sqliteq sources where one was asked for)."""


class CheckpointTornError(CheckpointError):
    """A query failed because a power cut tore its Spark checkpoint (its newest files empty
    or unreadable); the message names them and the repair command. ``checkpoint`` is its
    directory, ``torn`` the files (relative to it) the repair removes."""

    def __init__(self, message: str, checkpoint: str = "", torn: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.checkpoint = checkpoint
        self.torn = torn


class StoreRewoundError(CheckpointError, OffsetRangeError):
    """The store went back in time under a Spark query: it was restored from a copy older
    than the query's checkpoint (the source) or than what the sink committed (the sink's
    ledger), and perhaps grew again since, so offsets or batch ids name other events than
    the query's. An OffsetRangeError too, which the source raised for it before."""


class KafkaError(SparkQueueError):
    """Kafka could not be used as asked (``spark_queue.kafka``, ``sqliteq kafka ...``)."""


class KafkaClientMissingError(KafkaError, ImportError):
    """The Kafka client (confluent-kafka, the ``kafka`` extra) is not installed."""


class KafkaUnavailableError(KafkaError, TimeoutError):
    """No Kafka broker answered at the bootstrap servers within the stated timeout."""


class KafkaTopicError(KafkaError, LookupError):
    """A Kafka topic is unknown, not authorised, or not of the shape asked for."""


class KafkaTargetMismatchError(KafkaError, ValueError):
    """An export's Kafka topic holds records that are not the store topic's, offset for
    offset (another topic's, or more than the store has); nothing was written to it."""


class MirrorError(KafkaError):
    """A Kafka copy of store topics (``kafka export``, its ``--follow`` mirror) cannot go on
    as it stands; nothing misnumbered was sent (the message says what to do)."""


class MirrorLeaseError(MirrorError):
    """Another exporter of the same prefix holds the copy's lease (the message names its
    process, host and since when), or this one lost it to another."""


class MirrorGapError(MirrorError, DataLossError):
    """Events the copy still lacks were removed from the store (a forced prune, a hold
    deleted by hand): continuing would leave a gap or misnumber the copy."""


class MirrorTopicChangedError(MirrorError, LookupError):
    """A store topic was deleted (and maybe created anew) while its copy was being made: the
    Kafka topic holds the old topic's events, the new one's offsets start again."""
class ReplicationError(SparkQueueError):
    """Replication (``sqliteq replicate``/``restore``, Litestream) could not do what was
    asked: the binary is missing, the replica URL is unusable, Litestream failed."""


class ReplicatorRunningError(ReplicationError):
    """A second replicator was started on a store that one replicates already (two
    Litestreams on one store break its replica); the message names the first."""


class ReplicationTimeoutError(ReplicationError, TimeoutError):
    """A ``durability="replicated"`` write committed locally, but no replicator confirmed
    that the replica holds it within the wait (is ``sqliteq replicate`` running?)."""


class StreamTestError(SparkQueueError, AssertionError):
    """A check of ``spark_queue.testing.StreamTest`` failed (an answer that differs, a query
    that did not catch up in time, a failure that did not come): an AssertionError too, so
    pytest shows it as a failed assertion with its message."""
