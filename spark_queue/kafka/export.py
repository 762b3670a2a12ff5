"""Export store topics into Kafka, offset for offset, resumably.

Each store topic ``t`` goes to the Kafka topic ``prefix + t`` with ONE partition,
in which the record at offset ``n - shift`` is the store's event ``n``: the same
key and value bytes, headers and timestamp (CreateTime), plus an
``sqliteq.types`` header on the few records whose types an import would infer
wrongly from the bytes (:mod:`~spark_queue.kafka.records`). The shift is 0 unless
retention had removed the topic's head before its first export; it is fixed
then and recorded in the store (``store.topic(name).mirror_shift()``), and the positions
helpers apply it.

How an interrupted export stays a prefix: the producer is idempotent with
``acks=all`` and a gap is fatal, so within a run Kafka receives the events in
order, each once, and the delivery report of each is checked to land at its
expected offset. A rerun reads Kafka's end offset ``E`` and continues with the
store's event ``E + shift``, after comparing the records both sides hold at
Kafka's first and last offsets: a target holding other records (another topic,
another store, more records than the store has) is refused, naming it, and
nothing is written to it. The end is verified: Kafka's end offset against the
store's, and a checksum over the first and last records of both
(``tests/kafka/test_export.py``, ``tests/kafka/test_export_kill.py``).

What is exported: the events committed when a pass starts; ``follow=True``
repeats passes until ``stop`` is set (or Ctrl-C), for the weeks when producers
move over, waiting out broker outages (:mod:`~spark_queue.kafka.mirror`).

The copy's position holds the store's retention: it is saved as the next offset
of the consumer ``sqliteq.mirror[.<prefix>]`` (``Store.hold_name``) when a topic
is opened and after every delivered batch, so ``prune`` never deletes an event
the copy has not got unless forced. The opening saves it first at the store's
earliest offset, in the transaction that reads the bounds and fixes the shift,
before Kafka is asked anything, then at Kafka's end: a retention run while Kafka
answers deletes nothing the copy may lack. The store's side
(:class:`~spark_queue.store.MirrorCopies`) refuses what would misnumber the copy:
a position below the earliest offset or rows that do not start where the copy
ends (a forced prune: ``MirrorGapError``), a store topic deleted and created anew
under a running copy (``MirrorTopicChangedError``), and a second exporter of the
same prefix, told whose lease it met (``MirrorLeaseError``)
(``tests/kafka/test_export_guards.py``).

A topic the export creates gets one partition, :data:`topic_checks.EXPORT_TOPIC_CONFIG`,
``TopicOptions.config`` and ``replication_factor`` replicas; a topic's settings under
which Kafka would not keep the copy (compaction, LogAppendTime, a retention shorter than
the events' age) are refused unless forced (:mod:`~spark_queue.kafka.topic_checks`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat

from spark_queue.errors import (
    KafkaError,
    KafkaTargetMismatchError,
    KafkaTopicError,
    KafkaUnavailableError,
    SparkQueueError,
)
from spark_queue.kafka import mirror, topic_checks
from spark_queue.kafka.client_config import KafkaSettings, as_kafka_settings
from spark_queue.kafka.deliveries import Delivered
from spark_queue.kafka.link import KafkaLink
from spark_queue.kafka.link_types import KafkaTopic, Watermarks
from spark_queue.kafka.records import (
    Content,
    KafkaRecord,
    SchemaMarks,
    checksum,
    from_message,
    from_store_row,
)
from spark_queue.store import CopyMark, CopyOpened, Housekeeper, MirrorCopies, Store, hold_name

CHUNK_EVENTS = 5000  # events read from the store per snapshot and handed to the producer
SAMPLE_EVENTS = 100  # records compared at each end of the log when an export is verified

Progress = Callable[[str, int, int], None]  # (store topic, events sent this run, to send)
log = logging.getLogger("spark_queue.kafka.export")


@dataclass(frozen=True)
class TopicOptions:
    """How an export creates Kafka topics, and whether it copies into a topic whose settings
    would not keep the copy (``force``)."""

    replication_factor: int | None = None  # None: the broker's default.replication.factor
    config: Mapping[str, str] = field(default_factory=dict)  # over EXPORT_TOPIC_CONFIG
    force: bool = False


@dataclass(frozen=True)
class ExportResult:
    """One topic's export, verified: Kafka's log ``[kafka_start, kafka_end)`` holds the
    store's events ``[kafka_start + shift, kafka_end + shift)``."""

    topic: str
    kafka_topic: str
    shift: int
    written: int  # records this run wrote
    kafka_start: int
    kafka_end: int
    sampled: int  # records compared, at both ends of the log
    checksum: str  # SHA-256 of the sampled records' contents, equal on both sides


class _Target:
    """One store topic's Kafka copy during a run: the topic as opened (``mark``), where this
    run's records start, what Kafka answered of them (the link checks each lands at its
    offset), and what the hold names."""

    def __init__(self, mark: CopyMark, kafka_topic: str, next_kafka: int) -> None:
        self.mark = mark
        self.topic = mark.topic
        self.kafka_topic = kafka_topic
        self.shift = mark.shift
        self.start = next_kafka  # Kafka's end when the copy was opened
        self.delivered = Delivered(next_kafka, next_kafka)  # the link's last answer
        self.saved_upto = next_kafka  # the Kafka offset the store's hold names


class Exporter:
    """Exports over one link to Kafka, which it closes; :func:`export_topics` is the usual
    way in. ``copies`` is the store's side of the copy, its lease taken (:func:`export_topics`
    keeps one for a whole mirror); without it the exporter takes the lease itself and gives it
    back at :meth:`close` (MirrorLeaseError if another exporter of the prefix holds it)."""

    def __init__(
        self,
        store: Store,
        link: KafkaLink,
        prefix: str = "",
        progress: Progress | None = None,
        topic_options: TopicOptions | None = None,
        copies: MirrorCopies | None = None,
    ) -> None:
        self.store = store
        self.link = link
        self.prefix = prefix
        self.hold = hold_name(prefix)
        self.progress = progress
        self.topic_options = topic_options or TopicOptions()
        self.targets: dict[str, _Target] = {}
        self._own_copies = copies is None
        try:
            self.copies = copies or MirrorCopies(store, prefix).acquire()
        except BaseException:
            link.close()
            raise

    def close(self) -> None:
        """Drop what the producer still holds (a rerun or the next attempt resends it after
        reading Kafka's end) and close the clients."""
        try:
            self.link.close()
        finally:
            if self._own_copies:
                self.copies.release()

    # -- opening a target: checks before anything is written ---------------
    def target(self, topic: str) -> _Target:
        if topic in self.targets:
            return self.targets[topic]
        # The hold first, in the transaction that reads the bounds, before Kafka is asked
        # anything: a retention run while Kafka answers deletes nothing the copy may lack
        # (tests/kafka/test_export_guards.py).
        opened = self.copies.open(topic)
        try:
            target = self.targets[topic] = self._open_kafka(opened)
        except BaseException:
            try:
                self.copies.abandon(opened)  # a refused copy leaves no hold behind
            except SparkQueueError as exc:
                log.warning("store topic %r: the hold this run saved stays: %s", topic, exc)
            raise
        return target

    def _open_kafka(self, opened: CopyOpened) -> _Target:
        mark = opened.mark
        topic, kafka_topic = mark.topic, self.prefix + mark.topic
        found = self.link.describe_topic(kafka_topic) or self._create(topic, kafka_topic)
        parts = found.partitions
        if parts != [0]:
            raise KafkaTopicError(
                f"Kafka topic {kafka_topic!r} has {len(parts)} partitions; an export writes "
                f"one partition whose offsets are store topic {topic!r}'s: export to a new "
                "topic (--prefix) or delete it."
            )
        high = self._check_overlap(mark, kafka_topic, (opened.earliest, opened.latest))
        # As the broker applies them, whoever created it (a created topic passes: checked above).
        self._check_settings(topic, kafka_topic, high + mark.shift, found.config)
        # The hold names exactly what this copy holds (a copy deleted and made anew starts
        # lower); a position below the earliest offset (a forced prune since the opening) is
        # refused, never saved.
        self.copies.save([(mark, high + mark.shift)])
        return _Target(mark, kafka_topic, high)

    def _create(self, topic: str, kafka_topic: str) -> KafkaTopic:
        options = self.topic_options
        config = {**topic_checks.EXPORT_TOPIC_CONFIG, **options.config}
        self._check_settings(topic, kafka_topic, None, config)
        # As found: someone else may have created it since the metadata answered.
        return self.link.create_topic(kafka_topic, config,
                                      replication_factor=options.replication_factor)

    def _check_settings(self, topic: str, kafka_topic: str, start: int | None,
                        config: Mapping[str, str]) -> None:
        """Refuse (or with force, warn about) settings under which Kafka would not keep the
        copy from store offset ``start`` on: ``config``, those the export would create the
        topic with (``start`` None), or those it has."""
        creating = start is None
        if start is None:
            start = self.store.topic(topic).earliest_offset()
        found = topic_checks.refuse_or_warn(config, self.store, topic, kafka_topic, start,
                                            force=self.topic_options.force, creating=creating)
        for problem in found:
            log.warning("Kafka topic %r: %s; exporting anyway (--force)", kafka_topic, problem)

    def _check_overlap(self, mark: CopyMark, kafka_topic: str, store: tuple[int, int]) -> int:
        """Refuse a Kafka topic that is not a prefix of the store's copy, comparing the
        records both sides hold at Kafka's first and last offsets; returns Kafka's end."""
        topic, shift = mark.topic, mark.shift
        earliest, latest = store
        (_, high), windows = self._kafka_ends(kafka_topic, 1, held_from=earliest - shift)
        where = f"Kafka topic {kafka_topic!r} at {self.link.settings.bootstrap}"
        if high + shift > latest:
            raise KafkaTargetMismatchError(
                f"{where} holds records up to offset {high - 1}, more than store topic "
                f"{topic!r} has (its offsets end at {latest - 1 - shift} in Kafka's numbering, "
                f"shift {shift}): producers write it, or it is not this topic's copy. If "
                "producers moved to Kafka, the cutover is done: export this topic no more "
                "(docs/outgrowing.md, Cutover). Else export to a new Kafka topic (--prefix) or "
                "delete that one."
            )
        if high + shift < earliest:
            raise KafkaTargetMismatchError(
                f"{where} ends at offset {high}, but retention removed store topic {topic!r}'s "
                f"events up to {earliest - 1} (shift {shift}): the copy cannot be continued "
                "without a gap. Export to a new Kafka topic (--prefix)."
            )
        for offset, end, records in windows:
            marks = self._schema_marks(topic)
            mine = [from_store_row(row, topic, marks) for row in
                    self.copies.rows(mark, offset + shift, end + shift).to_pylist()]
            if mine != [from_message(m) for m in records]:
                raise KafkaTargetMismatchError(
                    f"{where} holds other records: its offset {offset} is not store topic "
                    f"{topic!r}'s offset {offset + shift} (key, value, headers or "
                    "timestamp differ). Nothing was written to it. If producers write it "
                    "while the store's go on, the cutover's order was broken "
                    "(docs/outgrowing.md, Cutover); else export to a new Kafka topic "
                    "(--prefix) or delete that one."
                )
        return high


    def _kafka_ends(self, kafka_topic: str, count: int, held_from: int, floor: int = 0
                    ) -> tuple[Watermarks, list[tuple[int, int, list[KafkaRecord]]]]:
        """Kafka's watermarks and, for each window at the ends of its log from ``floor`` on
        (:meth:`KafkaLink.log_ends`) that is not empty and starts at ``held_from`` or later
        (the store no longer holds what lies before), ``(start, end, Kafka's records)``."""
        ends = self.link.log_ends(kafka_topic, count, floor)
        return ends.watermarks, [(start, end, records) for start, end, records in ends.windows
                                 if held_from <= start < end]

    # -- sending ---------------------------------------------------------------
    def send(self, topic: str) -> int:
        """Send the store's events past what Kafka holds, up to the store's latest now;
        returns how many were handed to the producer (delivered once :meth:`flush` returns)."""
        target = self.target(topic)
        # Checked each pass, even with nothing to send: a topic deleted and created anew
        # starts its offsets again (MirrorTopicChangedError). The pass's one bound: the end
        # readers see (a replicated store's mark), read once; every chunk is read up to it.
        _, latest = self.copies.bounds(target.mark)
        start = target.delivered.sent + target.shift
        total = max(0, latest - start)
        marks = self._schema_marks(topic)  # after the bound: a version set since is past it
        for chunk_start in range(start, latest, CHUNK_EVENTS):
            if target.delivered.sent + target.shift != chunk_start:  # the numbering holds
                raise KafkaError(
                    f"export of store topic {topic!r}: the chunk from store offset "
                    f"{chunk_start} would go to Kafka offset {target.delivered.sent} of "
                    f"{target.kafka_topic!r}, not {chunk_start - target.shift}; nothing of it "
                    "was sent. Rerun the export: it continues from Kafka's end."
                )
            # Exactly [chunk_start, chunk end), or MirrorGapError: never other rows renumbered.
            rows = self.copies.rows(
                target.mark, chunk_start, min(latest, chunk_start + CHUNK_EVENTS)
            )
            # Converted as the link takes them (records.py's, not called back here): a row that
            # cannot be exported (a reserved header) ends the send after those before it.
            contents = map(from_store_row, rows.to_pylist(), repeat(topic), repeat(marks))
            target.delivered = self.link.produce(
                target.kafka_topic, contents, at=target.delivered.sent,
                name=f"store topic {topic!r}'s event", numbered_from=chunk_start)
            self._raise_failure(target)
            if self.progress is not None:
                self.progress(topic, min(latest, chunk_start + CHUNK_EVENTS) - start, total)
        return total

    def _schema_marks(self, topic: str) -> SchemaMarks:
        """The topic's schema headers as its versions are now (one read)."""
        return SchemaMarks(self.store.topic(topic).schema_history())

    def flush(self) -> None:
        """Wait for every record handed to the producer, then save the positions delivered
        (the holds) in one transaction."""
        delivered = self.link.flush()  # KafkaUnavailableError: records unanswered, none failed
        for target in self.targets.values():
            target.delivered = delivered.get(target.kafka_topic, target.delivered)
            self._raise_failure(target)
        moved = {t.topic: t for t in self.targets.values() if t.delivered.upto > t.saved_upto}
        if moved:
            self.copies.save([(t.mark, t.delivered.upto + t.shift) for t in moved.values()])
            for target in moved.values():
                target.saved_upto = target.delivered.upto

    def _raise_failure(self, target: _Target) -> None:
        delivered = target.delivered
        if delivered.failure is not None:
            why = f"Kafka did not take offset {delivered.upto}: {delivered.failure.text}"
        elif delivered.landed_at is not None:
            why = (f"the record meant for offset {delivered.upto} landed at {delivered.landed_at}"
                   ": another producer writes this topic, or it was deleted and created anew "
                   "(docs/outgrowing.md, Cutover: stop the store's producers before Kafka's "
                   "start)")
        else:
            return
        # A delivery that timed out or lost its broker ends with the outage: the mirror
        # waits it out (KafkaUnavailableError); the others are the export's to report.
        transient = delivered.failure is not None and delivered.failure.transient
        kind = KafkaUnavailableError if transient else KafkaError
        raise kind(
            f"export of store topic {target.topic!r} to Kafka topic {target.kafka_topic!r} "
            f"stopped: {why}. Kafka holds a prefix of the "
            "store up to there; rerun the export to continue."
        )

    # -- the end ---------------------------------------------------------------
    def verify(self, topic: str) -> ExportResult:
        """Compare Kafka's end offset with the store's, then the first and last records of
        both logs; KafkaTargetMismatchError names the first difference."""
        target = self.targets[topic]
        earliest, _ = self.store.topic(topic).bounds()
        # Both logs hold [floor, high): Kafka's retention or the store's may have cut a head.
        floor = earliest - target.shift
        (low, high), windows = self._kafka_ends(target.kafka_topic, SAMPLE_EVENTS,
                                                    held_from=floor, floor=floor)
        where = f"Kafka topic {target.kafka_topic!r}"
        if high != target.delivered.sent:
            raise KafkaTargetMismatchError(
                f"{where} ends at offset {high} after the export, expected "
                f"{target.delivered.sent}: "
                "another producer writes it. Stop the store's producers before Kafka's start "
                "(docs/outgrowing.md, Cutover)."
            )
        mine: list[Content] = []
        theirs: list[Content] = []
        marks = self._schema_marks(topic)
        for start, end, records in windows:
            mine += [from_store_row(row, topic, marks) for row in self.copies.rows(
                target.mark, start + target.shift, end + target.shift).to_pylist()]
            theirs += [from_message(m) for m in records]
        if mine != theirs:
            first = next(
                (i for i, pair in enumerate(zip(mine, theirs, strict=False)) if pair[0] != pair[1]),
                min(len(mine), len(theirs)),
            )
            raise KafkaTargetMismatchError(
                f"{where} differs from store topic {topic!r} in the records checked "
                f"({len(theirs)} read from Kafka, {len(mine)} from the store; the "
                f"{first + 1}th differs)."
            )
        return ExportResult(
            topic,
            target.kafka_topic,
            target.shift,
            target.delivered.upto - target.start,
            low,
            high,
            len(mine),
            checksum(mine),
        )


def export_topics(
    path: str | os.PathLike[str],
    kafka: KafkaSettings | str,
    topics: Sequence[str] | None = None,
    *,
    prefix: str = "",
    follow: bool = False,
    poll_ms: int = 500,
    stop: threading.Event | None = None,
    progress: Progress | None = None,
    topic_options: TopicOptions | None = None,
    give_up_after_s: float | None = None,
    on_status: Callable[[mirror.MirrorStatus], None] | None = None,
) -> list[ExportResult]:
    """Export ``topics`` (default: every topic) of the store at ``path``; see the module doc.

    Resumable: rerun after any interruption and it continues where Kafka ends. With
    ``follow`` it keeps mirroring new events (and, exporting every topic, new topics),
    waiting out broker outages (at most ``give_up_after_s`` each, if given; state changes
    go to ``on_status``), until ``stop`` is set or Ctrl-C, then flushes, verifies and
    returns.
    """
    settings = as_kafka_settings(kafka)
    stop = stop or threading.Event()
    with Store(path, create=False) as store:
        names = list(dict.fromkeys(topics)) if topics else [i.name for i in store.topics()]
        for name in names:
            store.topic(name).bounds()  # an unknown topic fails before anything is sent
        hold_name(prefix)  # a prefix that makes no hold's name fails first too
        # One exporter per prefix for the whole run (every pass of a mirror): a second one
        # is refused here, naming this one, before it reads a bound or asks Kafka anything.
        copies = MirrorCopies(store, prefix).acquire()

        def open_pass() -> Exporter:
            link = KafkaLink(settings, group=f"sqliteq-export-{os.getpid()}")
            return Exporter(store, link, prefix, progress, topic_options, copies)

        def names_of() -> list[str]:
            return names if topics else [info.name for info in store.topics()]

        try:
            if follow:
                # A mirror runs for days: it applies the store's retention like every other
                # long-running process on it (docs/operations.md), which its hold then limits.
                keeper = Housekeeper(str(path)).start()
                try:
                    watch = mirror.Mirror(store, prefix, topics, on_status)
                    exporter, names = mirror.follow(watch, open_pass, names_of, stop=stop,
                                                    poll_ms=poll_ms,
                                                    give_up_after_s=give_up_after_s)
                finally:
                    keeper.stop()
            else:
                exporter = open_pass()
            try:
                if not follow:
                    for name in names:
                        exporter.send(name)
                    exporter.flush()
                return [exporter.verify(name) for name in names]
            finally:
                exporter.close()
        finally:
            copies.release()
