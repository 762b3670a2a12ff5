"""The :class:`Store` handle: one apsw connection to one store file.

Each method states its transaction and its guarantee. A Store belongs to one
thread and one process (apsw connections must not cross a fork); open one per
worker thread or process. Spark-side code opens a Store inside the method
that runs in a worker and closes it before returning.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Unpack

import apsw
import pyarrow as pa

from spark_queue import defaults
from spark_queue.store import maintenance
from spark_queue.store.file import sink_checkpoints
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.backup import BackupProgress, copy_store
from spark_queue.store.file.connection import (
    first_value,
    translated,
)
from spark_queue.store.file.opening import open_store_file
from spark_queue.store.file.sqlite_errors import translate_errors
from spark_queue.store.floor import sinks
from spark_queue.store.floor.housekeeping import Housekeeping
from spark_queue.store.floor.transaction import Transaction
from spark_queue.store.queues import queue_admin
from spark_queue.store.queues.queue import Queue
from spark_queue.store.queues.queue_config import QueueSettings
from spark_queue.store.store_moved import with_moved_delegates
from spark_queue.store.streams import (
    arrow_read,
    consumer_offsets,
    consumer_positions,
    topic_creation,
    topic_log,
    topic_reads,
)
from spark_queue.store.streams.consumer_positions import PositionInfo
from spark_queue.store.streams.publish_one import OnePublisher
from spark_queue.store.streams.topic import Topic
from spark_queue.store.streams.topic_reads import Event, TopicInfo
from spark_queue.store.streams.topic_schemas import Quarantined


@with_moved_delegates
@translated
class Store:
    """A spark_queue store file, opened with the store's pragmas and schema checks.

    >>> with Store("events.sqlite") as store:           # doctest: +SKIP
    ...     store.publish_many("clicks", [{"user": 1}, {"user": 2}])
    ...     store.read("clicks", 0, limit=10)
    ...     store.topic("clicks").bounds()

    The everyday calls are here; a topic's offsets and settings are on
    :meth:`topic`, a queue's work on :meth:`queue`, retention runs and their
    setting on :attr:`housekeeping`. Each method opens its transaction through
    ``self.file`` (:class:`~spark_queue.store.file.connection.StoreConnection`);
    the names that moved keep working for one release (store_moved.py).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        readonly: bool = False,
        durability: str = defaults.DURABILITY,
        busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS,
        replica_wait_ms: int | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.readonly = readonly
        # The open file: its path, its transactions (read(), write()), each committed with
        # ``durability`` (replicated: once the replica holds it); ``conn`` is its raw apsw
        # connection.
        self.file = open_store_file(
            self.path, create=create, readonly=readonly, durability=durability,
            busy_timeout_ms=busy_timeout_ms, replica_wait_ms=replica_wait_ms,
        )
        self._one = OnePublisher(self.file)  # publish(): what it keeps between calls

    @property
    def conn(self) -> apsw.Connection:
        """The apsw connection, for SQL of your own (prefer :meth:`write`/:meth:`snapshot`)."""
        return self.file.conn

    # -- lifecycle -------------------------------------------------------
    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.path!r})"

    @contextlib.contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """One write transaction (BEGIN IMMEDIATE) around the block: all of it commits or none."""
        with self.file.write() as conn:
            yield conn

    def transaction(self) -> Transaction:
        """``with store.transaction() as tx:`` one write transaction (BEGIN IMMEDIATE) for the
        caller's SQL (``tx.execute``) and ``tx.publish``, ``tx.publish_many``, ``tx.enqueue``,
        ``tx.commit_offsets``: all of it commits at the block's end, or none of it if an
        exception leaves the block (docs/transactions.md)."""
        return Transaction(self.file, self._one)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Store]:
        """Run the block's reads against one consistent snapshot of the file."""
        with self.file.read():
            yield self

    # -- topics ----------------------------------------------------------
    def topic(self, name: str) -> Topic:
        """A handle on topic ``name``: its offsets (``bounds``, ``offset_for_timestamp``)
        and its settings (``configure``, ``set_retention``, ``prune``, ``delete``...).
        Nothing is read or written until one of its methods runs."""
        return Topic(self, name)

    def publish(
        self,
        topic: str,
        value: Any,
        *,
        key: str | bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timestamp_ms: int | None = None,
    ) -> int | Quarantined:
        """Append one event in its own transaction; returns its offset (durable on return).

        Creates ``topic`` if it does not exist (check ``store.topic(name).exists()`` first
        when the name comes from a user: a typo would make a new topic). Stores what
        ``publish_many([Record(value, key, headers, timestamp_ms)])`` stores. An event that
        does not fit the topic's schema raises SchemaMismatchError, or with
        ``on_invalid="quarantine"`` goes to its quarantine and returns a
        :class:`~spark_queue.store.streams.topic_schemas.Quarantined` (docs/schemas.md)."""
        return self._one.publish(topic, value, key, headers, timestamp_ms)

    def publish_many(self, topic: str, items: Iterable[Any]) -> range:
        """Append values or :class:`Record` items in ONE transaction; returns their offsets.

        All items get consecutive offsets and become visible together, or, on
        any error (a bad payload, a crash), none of them is stored. Creates ``topic``
        if it does not exist, as :meth:`publish` does.
        """
        with self.file.write() as conn:
            return topic_log.append(conn, topic, items)

    def read(
        self, topic: str, start: int = 0, end: int | None = None, limit: int | None = None
    ) -> list[Event]:
        """Events in ``[start, end)`` (at most ``limit``), decoded, from one snapshot.

        Offsets and payloads are verified: a hole, a duplicate, or a row another
        SQLite client stored against the format raises CorruptStoreError naming
        topic and offset.
        """
        with self.file.read() as conn:
            return topic_reads.read(conn, topic, start, end, limit)

    def read_arrow(
        self,
        topic: str,
        start: int = 0,
        end: int | None = None,
        limit: int | None = None,
        payload_format: str = "binary",
    ) -> pa.Table:
        """Events in ``[start, end)`` as Arrow (payloads undecoded), from one snapshot;
        offsets and headers verified as in :meth:`read`."""
        with self.file.read() as conn:
            return arrow_read.read_arrow(conn, topic, start, end, limit, payload_format)

    def read_arrow_payloads(
        self,
        topic: str,
        start: int,
        end: int,
        payload_format: str = "binary",
        headers: bool = False,
    ) -> pa.Table:
        """Events in ``[start, end)`` as Arrow without ``value_type`` (the Spark source's
        bulk read), from one snapshot; offsets verified dense, headers (when asked) checked."""
        with self.file.read() as conn:
            return arrow_read.read_arrow_payloads(conn, topic, start, end, payload_format,
                                                  headers)

    def topics(self) -> list[TopicInfo]:
        """Every topic with its earliest and latest offsets and event count."""
        with self.file.read() as conn:
            return topic_reads.list_topics(conn)

    @property
    def create_topics_on_publish(self) -> bool:
        """Whether a publish to a topic that does not exist creates it (every path: this
        Store, the Producer, transactions, the outbox, the Spark sink, ``sq_publish``; on
        unless set off). One read."""
        with self.file.read() as conn:
            return topic_creation.creates_on_publish(conn)

    def set_create_topics_on_publish(self, on: bool) -> None:
        """Store-wide, one transaction: off, every publish to a missing topic is refused
        (``UnknownTopicError``; ``sq_publish`` raises), and topics are created only when asked
        (``store.topic(name).create()``, ``sqliteq topic create``)."""
        with self.file.write() as conn:
            topic_creation.set_creates_on_publish(conn, on)

    # -- consumers -------------------------------------------------------
    def commit_offsets(
        self, consumer: str, offsets: Mapping[str, int], *, reset: bool = False,
        reader: str | None = None, confirmed: bool = True, hand_over: bool = False,
    ) -> dict[str, int]:
        """Save ``consumer``'s next offsets in one transaction; never moves back unless reset.

        ``reader`` names one query reading under the name: the offsets are its own position,
        which holds retention however far the name's other queries are, and the name's offset
        becomes the lowest position. ``confirmed=False`` marks a start position its query has
        not checkpointed yet: it holds retention only while saved again within
        ``UNCONFIRMED_POSITION_HOLD_MS``. A reset without ``reader`` moves every position."""
        with self.file.write() as conn:
            return consumer_offsets.commit(conn, consumer, offsets, reset=reset, reader=reader,
                                           confirmed=confirmed, hand_over=hand_over)

    def reset_offsets(
        self, consumer: str, topic_names: Sequence[str], target: Callable[[str], int], *,
        reader: str | None = None,
    ) -> dict[str, int]:
        """Move ``consumer``'s saved offsets, back or forward, to ``target(topic)`` for each topic.

        ``target`` runs inside the write transaction, so what it reads (this
        Store's ``topic(name).bounds()``, ``offset_for_timestamp``) cannot change before
        the offsets are saved: a prune in between would leave an offset below
        the earliest, which readers report as lost data. Errors it raises
        roll everything back. Every query's position under the name moves too; with
        ``reader``, only that query's position.
        """
        with self.file.write() as conn:
            return consumer_offsets.commit(
                conn, consumer, {topic: target(topic) for topic in topic_names}, reset=True,
                reader=reader,
            )

    def save_start(
        self, consumer: str, reader: str, choose: Callable[[], Mapping[str, int]]
    ) -> dict[str, int]:
        """Choose a new query's start offsets (``choose()``, run inside ONE write transaction,
        so no retention run can delete above them before they are saved) and save them as
        ``reader``'s unconfirmed position under ``consumer``; returns them."""
        with self.file.write() as conn:
            start = dict(choose())
            consumer_offsets.commit(conn, consumer, start, reader=reader, confirmed=False)
            return start

    def committed_offsets(self, consumer: str) -> dict[str, int]:
        """The saved next-offsets of ``consumer`` by topic."""
        with self.file.read() as conn:
            return consumer_offsets.committed(conn, consumer)

    def consumers(self, topic: str | None = None) -> list[consumer_offsets.ConsumerInfo]:
        """Consumers with their offsets and lag, from one snapshot."""
        with self.file.read() as conn:
            return consumer_offsets.list_consumers(conn, topic)

    def consumer_positions(self, topic: str | None = None) -> list[PositionInfo]:
        """The position of each query reading under a consumer name, from one snapshot."""
        with self.file.read() as conn:
            tid = None if topic is None else topic_reads.topic_id(conn, topic)
            return consumer_positions.list_positions(conn, tid)

    def delete_consumer(
        self, consumer: str, topic: str | None = None, *, reader: str | None = None
    ) -> int:
        """Forget ``consumer``'s saved offsets and its queries' positions, for one topic or all
        (one transaction); returns how many topics it had. Retention is no longer held back by
        it. With ``reader``, only that query's position goes (returns how many rows)."""
        with self.file.write() as conn:
            return consumer_offsets.delete(conn, consumer, topic, reader)

    # -- maintenance -------------------------------------------------------
    @property
    def housekeeping(self) -> Housekeeping:
        """A handle on the store's housekeeping: ``run()``, ``status()``,
        ``set_interval(ms)``, ``held_back()``, ``prune()`` of every topic, ``sweep_expired()``."""
        return Housekeeping(self)

    def backup(
        self,
        dest_path: str | os.PathLike[str],
        progress: BackupProgress | None = None,
    ) -> int:
        """Write a consistent copy of the store to a new file while writers continue.

        One read transaction around the whole copy, so it finishes however
        often others commit; ``progress(copied_pages, total_pages)`` after each
        step. Returns the pages copied; never overwrites a file.
        """
        with translate_errors(self.path):
            return copy_store(self.conn, dest_path, progress)

    # -- the sink ledger (spark_queue/store/floor/sinks.py) ----------------------
    def commit_sink_batch(
        self,
        sink_id: str | None,
        batch_id: int | None,
        rows: sinks.SinkRows,
        *,
        contiguous: bool = False,
    ) -> sinks.SinkCommit:
        """Write one numbered batch exactly once: its rows and the sink-ledger entry in ONE
        write transaction; a batch id at or below the sink's last one writes nothing.

        ``rows`` is :class:`~spark_queue.store.floor.sinks.QueueRows` (jobs enqueued, the queue
        created if missing) or :class:`~spark_queue.store.floor.sinks.TopicRows` (pre-encoded
        chunks appended to its topic, or each row to the topic its chunk names). With
        ``sink_id`` and ``batch_id`` both None the rows are written once with no
        ledger entry. The iterables are consumed inside the transaction. With
        ``contiguous`` (a writer whose ids never skip, as Spark's micro-batches) a
        batch id past the ledger's next one raises StoreRewoundError, writing nothing.
        """
        with translate_errors():
            return sinks.commit_rows(self.file, sink_id, batch_id, rows, contiguous=contiguous)

    def sink_for_checkpoint(self, location: str, query_id: str, *, id_lost: bool) -> str:
        """The ledger entry a sink without ``sinkId`` of query ``query_id`` writes under, for
        its Spark checkpoint at ``location`` (one transaction; the rule:
        :mod:`spark_queue.store.file.sink_checkpoints`)."""
        with self.file.write() as conn:
            return sink_checkpoints.sink_for_checkpoint(conn, location, query_id,
                                                         id_lost=id_lost)

    def page_size(self) -> int:
        """Bytes per page of the file (:meth:`backup` reports pages)."""
        with translate_errors(self.path):
            return first_value(self.conn.execute("PRAGMA page_size"))

    def check(self) -> maintenance.CheckReport:
        """SQLite's integrity check plus every store rule a foreign writer can break
        (names, dense offsets, next_offset, payload types, JSON, headers, consumer offsets)."""
        with translate_errors(self.path):
            return maintenance.check(self.conn)

    def data_version(self) -> int:
        """SQLite's ``PRAGMA data_version``: changes whenever another connection commits.

        Cheap (no lock, no I/O); pollers compare it to skip work while the file is unchanged.
        """
        return self.file.data_version()

    def wait_for_commit(self, timeout_ms: int, *, stop: threading.Event | None = None) -> bool:
        """Sleep until another connection commits, ``timeout_ms`` passes or ``stop`` is set;
        True if a commit came (no lock held while waiting; it polls :meth:`data_version`
        with back-off). A worker waits for work with it."""
        check_int(timeout_ms, "timeout_ms", high=defaults.MAX_WAIT_MS, owner="wait_for_commit")
        return self.file.wait_for_commit(timeout_ms, stop)

    # -- queues (spark_queue/store/queues/) -----------
    def queue(self, name: str, **settings: Unpack[QueueSettings]) -> Queue:
        """A handle on work queue ``name``; with settings, create or configure it first.

        Configuring is one transaction. Without settings nothing is written: the
        first enqueue creates the queue with the defaults.
        """
        handle = Queue(self, name)
        if settings:
            handle.configure(**settings)
        return handle

    def queues(self) -> list[queue_admin.QueueConfig]:
        """Every queue's settings, by name."""
        with self.file.read() as conn:
            return queue_admin.list_queues(conn)

    def queue_stats(self) -> list[queue_admin.QueueStats]:
        """Ready/leased/delayed/dead counts and oldest ready age of each queue (one snapshot)."""
        with self.file.read() as conn:
            return queue_admin.stats(conn)

    def delete_queue(self, name: str) -> int:
        """Remove a queue with its jobs and dead letters (one transaction); returns jobs removed."""
        with self.file.write() as conn:
            return queue_admin.delete_queue(conn, name)
