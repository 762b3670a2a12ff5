"""Offsets: where a read starts, how far it may go, what was lost.

Offsets are JSON dicts ``{topic: next_offset}`` with sorted keys (Spark
compares offsets by their JSON text, so the order must be stable). A
subscribed topic missing from a dict is at offset 0: topics created while a
``topicPattern`` (or a named topic created after start) query runs are read
from their first event. The planning runs on the driver; executors call
:func:`task_store` and :func:`effective_start` when they read a range, and a
batch read's planning opens its store through :func:`task_store` too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from spark_queue.connector.offset_json import EARLIEST_SENTINEL, LATEST_SENTINEL, SourceOffset
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import (
    CheckpointError,
    DataLossError,
    OptionError,
    StoreNotFoundError,
    UnknownTopicError,
)

if TYPE_CHECKING:
    from spark_queue.store import Store

log = logging.getLogger("spark_queue.connector")

Bounds = dict[str, tuple[int, int]]  # topic -> (earliest, latest)


def open_source_store(options: SourceOptions) -> Store:
    """Open the store named by ``path``; a missing file is an error (a reader never creates one)."""
    # Imported here, not with the module: Spark starts a fresh interpreter for each
    # planning process, and the ones that only validate options (schema(), the reader
    # built to pickle ``read``) or start the stream never open the store
    # (BENCHMARKS.md, "Stream start").
    from spark_queue.store import Store

    check_path_exists(options)
    return Store(options.path, create=False)


class KeptStore:
    """The store a long-lived planning process reads at each of Spark's calls, kept open
    between them: an opening parses the file's schema again (about 0.7 ms more since
    schema 14's triggers, three openings a micro-batch before; BENCHMARKS.md, "The house
    against the code before"). Opened anew when ``path`` names another file than the one
    open (a restore or a copy moved into place: os.replace gives the path a new inode),
    and after any error in a use (nothing half-done is carried into the next call)."""

    __slots__ = ("options", "_store", "_file")

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._store: Store | None = None
        self._file: tuple[int, int] | None = None

    @contextlib.contextmanager
    def use(self) -> Iterator[Store]:
        try:
            here = os.stat(self.options.path)
        except FileNotFoundError:
            self.close()
            check_path_exists(self.options)  # raises, naming the option
            raise
        if self._store is None or self._file != (here.st_dev, here.st_ino):
            self.close()
            self._store = open_source_store(self.options)
            self._file = (here.st_dev, here.st_ino)
        try:
            yield self._store
        except BaseException:
            self.close()
            raise

    # A reader Spark pickles for its executors carries the options, never a connection.
    def __getstate__(self) -> SourceOptions:
        return self.options

    def __setstate__(self, options: SourceOptions) -> None:
        self.options, self._store, self._file = options, None, None

    def close(self) -> None:
        store, self._store, self._file = self._store, None, None
        if store is not None:
            store.close()


#: Stores an executor's Python worker keeps open between its tasks, most recent last.
#: Spark reuses a worker for the next task (spark.python.worker.reuse, on by default), and
#: each task opened its store and parsed the file's schema anew (the stream read's 0.84x
#: against aa58b45; BENCHMARKS.md, "The house against the code before"). A few only:
#: each holds a file open, and a test run reads hundreds of temporary stores.
_IDLE: dict[str, KeptStore] = {}
_IDLE_PID = os.getpid()
_IDLE_MAX = 4
_IDLE_LOCK = threading.Lock()
# A forked child must never use, nor close, its parent's connections (SQLite's rule for
# fork): they are kept here, referenced, until the child exits.
_INHERITED: list[KeptStore] = []


@contextlib.contextmanager
def task_store(options: SourceOptions) -> Iterator[Store]:
    """The store a task reads ``path`` on: one this process kept idle from an earlier task
    if it still names the same file, else a new one. Held by this task alone while in use
    (a second reader at once opens its own), kept for the next task when the use ends
    cleanly, closed when it raised (:class:`KeptStore`)."""
    global _IDLE_PID
    with _IDLE_LOCK:
        if os.getpid() != _IDLE_PID:
            _INHERITED.extend(_IDLE.values())
            _IDLE.clear()
            _IDLE_PID = os.getpid()
        kept = _IDLE.pop(options.path, None)
    if kept is None:
        kept = KeptStore(options)
    with kept.use() as store:
        yield store
    with _IDLE_LOCK:
        _IDLE[options.path] = kept
        while len(_IDLE) > _IDLE_MAX:
            _IDLE.pop(next(iter(_IDLE))).close()


def check_path_exists(options: SourceOptions) -> None:
    """Fail naming ``path`` unless the file exists; the store itself is opened, and so
    checked (a store, a version this code reads, a safe file system), at its first use."""
    if not os.path.exists(options.path):
        raise StoreNotFoundError(
            f"{FORMAT_NAME} option 'path' names {options.path!r}, which does not exist on this "
            "machine; create the store first (`sqliteq init`, or publish to it) or fix the path."
        )


def subscribed_bounds(store: Store, options: SourceOptions) -> Bounds:
    """``(earliest, latest)`` of every existing subscribed topic, from one snapshot."""
    return {
        info.name: (info.earliest, info.latest)
        for info in store.topics()
        if options.subscribes(info.name)
    }


def missing_topics(options: SourceOptions, bounds: Bounds) -> list[str]:
    """The topics named by ``topic``, ``topics`` or ``assign`` that the store does not hold
    (a ``topicPattern`` names none)."""
    if options.topic_pattern is not None:
        return []
    return [topic for topic in options.topics if topic not in bounds]


def missing_topics_message(options: SourceOptions, missing: list[str], known: list[str]) -> str:
    """``topic 'clickz' does not exist in 'app.sqlite' (did you mean 'clicks'?)``: the close
    names, else the store's topics (a few), and the command that lists them."""
    import difflib  # only when a topic is missing

    parts = []
    for topic in missing:
        near = difflib.get_close_matches(topic, known, n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(map(repr, near))}?)" if near else ""
        parts.append(f"{topic!r}{hint}")
    what = "topic" if len(missing) == 1 else "topics"
    return (
        f"{FORMAT_NAME} source: {what} {', '.join(parts)} "
        f"{'does' if len(missing) == 1 else 'do'} not exist in {options.path!r}; "
        f"list its topics with `sqliteq topics {options.path}`"
    )


def require_named_topics(store: Store, options: SourceOptions, bounds: Bounds) -> None:
    """A batch read of a named topic that does not exist fails (as Kafka's source and the
    CLI do) instead of reading no rows."""
    missing = missing_topics(options, bounds)
    if missing:
        raise UnknownTopicError(
            missing_topics_message(options, missing, [t.name for t in store.topics()])
            + ", or create it (`sqliteq topic create`) before reading."
        )


class MissingTopics:
    """A stream's named topics that the store does not hold yet. The stream waits for them
    (a producer may create them later) and reads them from offset 0 once they exist; a typo
    would read nothing forever, so each is logged once at WARN, naming the close topics."""

    def __init__(self, *, reports_latest: bool = True) -> None:
        self.now: list[str] = []
        self._warned: set[str] = set()
        # The reader's reportLatestOffset shows them as null (the simple reader has none).
        self._reported = (" (its progress reports the topic's latestOffset as null until then)"
                          if reports_latest else "")

    def note(self, options: SourceOptions, bounds: Bounds, store: Store | None = None) -> None:
        self.now = missing_topics(options, bounds)
        new = [topic for topic in self.now if topic not in self._warned]
        if not new:
            return
        self._warned.update(new)
        own = store is None
        if store is None:
            store = open_source_store(options)
        try:
            known = [t.name for t in store.topics()]
        finally:
            if own:
                store.close()
        log.warning(
            "%s; the stream waits for it to be created and reads it from offset 0%s. A typo? "
            "Stop the query and fix the option.",
            missing_topics_message(options, new, known), self._reported,
        )


def checkpoint_offsets(offsets: object) -> dict[str, int]:
    """``{topic: next_offset}`` of offsets as Spark hands them back, checked to be this
    source's (:meth:`SourceOffset.from_spark`: another source's fail naming it)."""
    return SourceOffset.from_spark(offsets).positions


def check_store(offsets: SourceOffset, identity: str, options: SourceOptions) -> None:
    """Refuse offsets recorded against another store file than the one ``path`` names now
    (``identity``), whatever the two files' lengths: a store re-created at the path (a
    cluster restart wiped the driver's disk) may be shorter, as long or longer, and its
    offsets name other events. Offsets without an identity (a checkpoint written before
    stores had one) pass: the next batch planned records it
    (``tests/connector/source/test_store_identity.py``)."""
    recorded = offsets.store
    if recorded is None or recorded == identity:
        return
    raise CheckpointError(
        f"{FORMAT_NAME} source: the checkpoint holds positions in store {recorded}, but "
        f"'path' {options.path!r} is store {identity}, another file (a store created anew at "
        "that path, e.g. after a cluster restart wiped the driver's disk): its offsets name "
        "other events. To resume, put back that store's copy (`sqliteq backup`) at the path; "
        "to start over on this file, give the query a new checkpointLocation "
        "(docs/cluster.md#checkpoints)."
    )


def sorted_offsets(offsets: dict[str, int]) -> dict[str, int]:
    return {topic: offsets[topic] for topic in sorted(offsets)}


def starting_offsets(store: Store, options: SourceOptions, bounds: Bounds) -> dict[str, int]:
    """Resolve where a new query starts, against the store now.

    ``startingTimestamp`` / ``startingOffsetsByTimestamp``: each topic's first
    offset stamped at or after the time (-2 earliest, -1 latest; a topic left
    out of the JSON starts at earliest); ``startingOffsets`` otherwise.
    """
    kind = options.starting
    if kind == "earliest":
        start = {t: earliest for t, (earliest, _) in bounds.items()}
    elif kind == "latest":
        start = {t: latest for t, (_, latest) in bounds.items()}
    elif kind == "committed":
        assert options.consumer is not None, "parse_source_options: committed needs a consumer"
        saved = store.committed_offsets(options.consumer)
        start = {t: saved.get(t, earliest) for t, (earliest, _) in bounds.items()}
    elif kind == "timestamp":
        assert options.starting_timestamp_ms is not None, "parse_source_options sets it"
        start = {
            t: _at_time(store, options, "startingTimestamp", t, options.starting_timestamp_ms,
                        bounds[t])
            for t in bounds
        }
    elif kind == "timestamps":
        given = dict(options.starting_timestamps)
        start = {
            t: _at_time(store, options, "startingOffsetsByTimestamp", t,
                        given.get(t, EARLIEST_SENTINEL), bounds[t])
            for t in bounds
        }
    else:  # json
        given = options.starting_offsets
        start = {}
        for topic in set(bounds) | set(given):
            earliest, latest = bounds.get(topic, (0, 0))
            offset = given.get(topic, EARLIEST_SENTINEL)
            if offset == EARLIEST_SENTINEL:
                offset = earliest
            elif offset == LATEST_SENTINEL:
                offset = latest
            elif topic in bounds and offset > latest:
                raise OptionError(
                    f"{FORMAT_NAME} option 'startingOffsets' asks for offset {offset} of topic "
                    f"{topic!r}, beyond its latest offset {latest}; use an offset from "
                    f"{earliest} to {latest}, or -1 for latest."
                )
            start[topic] = offset
    return sorted_offsets(start)


def ending_offsets(
    options: SourceOptions, bounds: Bounds, store: Store | None = None
) -> dict[str, int]:
    """Resolve where a batch read ends (exclusive), against the store now.

    ``endingTimestamp`` / ``endingOffsetsByTimestamp`` end each topic before
    its first event stamped at or after the time (latest when there is none;
    a topic left out of the JSON ends at latest), and need ``store``.
    """
    end = {t: latest for t, (_, latest) in bounds.items()}
    if options.ending in ("timestamp", "timestamps"):
        if store is None:
            raise TypeError("ending_offsets needs the store to resolve a timestamp")
        if options.ending == "timestamp":
            assert options.ending_timestamp_ms is not None, "parse_source_options sets it"
            times = dict.fromkeys(bounds, options.ending_timestamp_ms)
        else:
            times = {t: ts for t, ts in options.ending_timestamps if t in bounds}
        for topic, ts in times.items():
            end[topic] = _first_offset_at_time(store, topic, ts, bounds[topic])
        return sorted_offsets(end)
    for topic, offset in options.ending_offsets.items():
        latest = bounds.get(topic, (0, 0))[1]
        if offset == LATEST_SENTINEL:
            offset = latest
        elif offset > latest:
            raise OptionError(
                f"{FORMAT_NAME} option 'endingOffsets' asks for offset {offset} of topic "
                f"{topic!r}, "
                f"beyond its latest offset {latest}; use at most {latest}, or -1 for latest."
            )
        end[topic] = offset
    return sorted_offsets(end)


def _first_offset_at_time(
    store: Store, topic: str, timestamp_ms: int, bounds: tuple[int, int]
) -> int:
    """The first offset of ``topic`` stamped at or after the time; latest if none."""
    if timestamp_ms == EARLIEST_SENTINEL:
        return bounds[0]
    if timestamp_ms == LATEST_SENTINEL:
        return bounds[1]
    return store.topic(topic).offset_for_timestamp(timestamp_ms)


def _at_time(
    store: Store, options: SourceOptions, name: str, topic: str, timestamp_ms: int,
    bounds: tuple[int, int],
) -> int:
    offset = _first_offset_at_time(store, topic, timestamp_ms, bounds)
    if (
        options.timestamp_strategy == "error"
        and timestamp_ms not in (EARLIEST_SENTINEL, LATEST_SENTINEL)
        and offset == bounds[1]
    ):
        raise OptionError(
            f"{FORMAT_NAME} option '{name}' asks for the first event of topic {topic!r} stamped at "
            f"or after {timestamp_ms} ms, and there is none (startingOffsetsByTimestampStrategy"
            "=error). Give an earlier time, or set startingOffsetsByTimestampStrategy=latest "
            "to start after the topic's last event."
        )
    return offset


def effective_start(
    topic: str, requested: int, earliest: int, options: SourceOptions
) -> int:
    """``requested``, or ``earliest`` when retention removed ``[requested, earliest)``.

    With failOnDataLoss (the default) a gap raises DataLossError naming the
    topic and both offsets; otherwise it logs a warning and skips ahead.
    """
    if requested >= earliest:
        return requested
    message = (
        f"{FORMAT_NAME} source: topic {topic!r} offsets [{requested}, {earliest}) were removed by "
        f"retention before they were read (requested offset {requested}, earliest available "
        f"offset {earliest})."
    )
    if options.fail_on_data_loss:
        raise DataLossError(
            message + " Set failOnDataLoss=false to skip to the earliest offset, or keep "
            "events longer (a saved consumer offset holds retention back)."
        )
    log.warning("%s Skipping to offset %d (failOnDataLoss=false).", message, earliest)
    return earliest


def cap_rows(available: dict[str, int], max_rows: int) -> dict[str, int]:
    """Share ``max_rows`` among topics in proportion to their available rows.

    Returns rows admitted per topic: each at most its available count, the
    total exactly ``min(max_rows, sum(available))``.
    """
    total = sum(available.values())
    if total <= max_rows:
        return dict(available)
    admitted = {t: (rows * max_rows) // total for t, rows in available.items()}
    left = max_rows - sum(admitted.values())
    for topic in sorted(available, key=lambda t: (-(available[t] - admitted[t]), t)):
        if left == 0:
            break
        if admitted[topic] < available[topic]:
            admitted[topic] += 1
            left -= 1
    return admitted
