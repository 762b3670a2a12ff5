"""Backups and integrity checks of a store file.

``check`` validates what SQLite cannot: the rules a writer outside
spark_queue (any SQLite client) can break. Each problem names the topic (or
consumer), the offsets and what is wrong; the reads that meet such a row
raise :class:`~spark_queue.errors.CorruptStoreError` with the same facts.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import NamedTuple

import apsw

from spark_queue import defaults
from spark_queue.errors import InvalidNameError, StoreError, StoreNotFoundError
from spark_queue.setting_table import QUEUE_SETTINGS, TOPIC_SETTING, stored_problem
from spark_queue.store import housekeeping
from spark_queue.store.file import replica_mark
from spark_queue.store.file.connection import (
    first_value,
    now_ms,
    open_connection,
    open_errors,
    read_transaction,
    translate_errors,
)
from spark_queue.store.file.names import validate_name
from spark_queue.store.file.schema import (
    APPLICATION_ID,
    latest_version,
    needs_migrating,
    read_state,
    readable_version,
)
from spark_queue.store.queues.queue_config import bad_settings
from spark_queue.store.streams import consumer_positions, topic_reads
from spark_queue.store.streams.retention import bad_retention
from spark_queue.store.streams.topic_reads import offsets_are_unique
from spark_queue.times import format_duration_ms

# 4 MiB of 4 KiB pages per step: a progress report every few milliseconds.
_BACKUP_PAGES_PER_STEP = 1024
# How many offsets a check problem lists before it says "..."
_EXAMPLES = 5

BackupProgress = Callable[[int, int], None]


class CheckReport(NamedTuple):
    """``ok`` when nothing is wrong; ``warnings`` say what needs an operator but breaks no
    rule (a consumer holding retention back for long), and never make ``ok`` False."""

    ok: bool
    problems: list[str]
    warnings: tuple[str, ...] = ()


class BackupSource:
    """A store file opened for a backup that writes nothing to it and migrates nothing: the copy
    keeps the source's schema version, so the release that wrote the source opens it,
    and the source stays byte-identical (``tests/store/test_backup_old_stores.py``)."""

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS
    ) -> None:
        self.path = os.fspath(path)
        # Read-write but query_only, not SQLITE_OPEN_READONLY: a read-only connection to a
        # WAL file leaves -wal and -shm files behind it, while this one, writing nothing,
        # lets SQLite remove them on close as for any last connection. (On a read-only
        # file SQLite opens it read-only by itself.)
        self.conn = open_connection(self.path, create=False, busy_timeout_ms=busy_timeout_ms)
        try:
            with open_errors(self.path):
                self.conn.execute("PRAGMA query_only=ON")
            self.version = readable_version(self.conn, self.path)
        except BaseException:
            self.conn.close()
            raise

    def page_size(self) -> int:
        with translate_errors(self.path):
            return int(first_value(self.conn.execute("PRAGMA page_size")))

    def backup(self, dest_path: str | os.PathLike[str], progress: BackupProgress | None = None
               ) -> int:
        """As :meth:`Store.backup <spark_queue.store.Store.backup>`: returns the pages copied."""
        with translate_errors(self.path):
            return backup(self.conn, dest_path, progress)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> BackupSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def backup_file(
    path: str | os.PathLike[str],
    dest_path: str | os.PathLike[str],
    progress: BackupProgress | None = None,
) -> int:
    """Copy the store file ``path`` to the new file ``dest_path`` without migrating or
    writing the source (see :class:`BackupSource`); returns the pages copied."""
    with BackupSource(path) as source:
        return source.backup(dest_path, progress)


def backup(
    conn: apsw.Connection,
    dest_path: str | os.PathLike[str],
    progress: BackupProgress | None = None,
) -> int:
    """Copy the store to ``dest_path`` (one consistent snapshot, made online); returns pages.

    The whole copy runs inside ONE read transaction on the source. SQLite's
    backup API restarts from page 0 whenever another connection writes
    between two steps, so stepping outside a transaction never finishes on a
    store that commits every few milliseconds; inside one, the snapshot
    cannot change, and in WAL mode writers go on meanwhile (the WAL grows
    until the copy ends). We chose this over ``VACUUM INTO``, which gives the
    same consistency but rebuilds every table and index (slower on large
    files) and reports no progress: here ``progress(copied, total)`` is
    called after each step of ``_BACKUP_PAGES_PER_STEP`` pages.

    The copy is written to a temporary file beside ``dest_path`` and linked
    into place only when complete, so ``dest_path`` never holds half a copy
    and an existing file is never overwritten
    (``tests/store/test_backup.py`` guards it under a publishing process).
    """
    dest_path = os.fspath(dest_path)
    if os.path.lexists(dest_path):
        raise StoreError(
            f"backup destination {dest_path!r} already exists; "
            "choose a new path (a backup never overwrites a file)."
        )
    folder = os.path.dirname(os.path.abspath(dest_path))
    try:
        fd, partial = tempfile.mkstemp(prefix=".sqliteq-backup-", suffix=".partial", dir=folder)
    except OSError as exc:
        raise StoreError(
            f"cannot create backup {dest_path!r}: {exc.strerror}; choose a writable directory."
        ) from exc
    os.close(fd)
    try:
        with open_errors(partial):
            pages = _copy(conn, partial, progress)
        _link_new(partial, dest_path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
    return pages


def _copy(conn: apsw.Connection, partial: str, progress: BackupProgress | None) -> int:
    dest = apsw.Connection(partial)
    try:
        with read_transaction(conn):
            # BEGIN is deferred: this read pins the snapshot every step copies from.
            conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()
            with dest.backup("main", conn, "main") as step:
                while not step.done:
                    step.step(_BACKUP_PAGES_PER_STEP)
                    if progress is not None:
                        progress(step.page_count - step.remaining, step.page_count)
                pages = step.page_count
        return pages
    finally:
        dest.close()


def _link_new(partial: str, dest_path: str) -> None:
    # link() fails when dest_path exists: no window in which a file that
    # appeared meanwhile could be overwritten.
    try:
        os.link(partial, dest_path)
    except FileExistsError as exc:
        raise StoreError(
            f"backup destination {dest_path!r} appeared while the backup ran; "
            "choose a new path (a backup never overwrites a file)."
        ) from exc
    except OSError as exc:
        raise StoreError(f"cannot create backup {dest_path!r}: {exc.strerror}.") from exc


def check_file(path: str | os.PathLike[str]) -> CheckReport:
    """Check a store file that may be too damaged to open as a :class:`Store`.

    Opens it read-only with no schema checks, so a damaged file still gets a
    report of what SQLite finds instead of an error at open; nothing is
    ever written to the file. A store an older release wrote (not migrated
    yet) raises :class:`StoreError` saying it needs migrating.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise StoreNotFoundError(f"store file {path!r} does not exist.")
    if os.path.isdir(path):
        return CheckReport(False, [f"{path!r} is a directory, not a store file."])
    try:
        conn = _looking_connection(path)
    except apsw.Error as exc:
        return CheckReport(False, [f"cannot open {path!r}: {exc}"])
    try:
        try:
            with read_transaction(conn):
                state = read_state(conn)
        except apsw.Error:
            state = None  # damaged: check() reports what SQLite finds
        if (state is not None and state.application_id == APPLICATION_ID
                and not state.is_empty and state.user_version < latest_version()):
            # An older release's tables: checked against this schema they would read as
            # damage (a missing table). Said as tail and topics say it; the file untouched.
            raise StoreError(needs_migrating(path, state.user_version))
        return check(conn)
    except apsw.Error as exc:
        return CheckReport(False, [f"{path!r}: {exc}"])
    finally:
        conn.close()


def _looking_connection(path: str) -> apsw.Connection:
    """A connection that writes nothing and leaves nothing beside the file.

    As :class:`BackupSource`: read-write but ``query_only``, since a SQLITE_OPEN_READONLY
    connection to a WAL file leaves -wal and -shm files behind it, while this one, the last
    connection, lets SQLite remove them on close (``tests/cli/test_read_only_commands.py``).
    A file or folder this process may not write is opened read-only instead."""
    try:
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READWRITE)
    except apsw.CantOpenError:
        return apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.execute("PRAGMA query_only=ON")
    except apsw.Error:
        conn.close()
        raise
    return conn


def check(conn: apsw.Connection) -> CheckReport:
    """SQLite's integrity check plus every store rule a foreign writer can break."""
    problems = [row[0] for row in conn.execute("PRAGMA integrity_check") if row[0] != "ok"]
    if problems:
        return CheckReport(False, problems)
    with read_transaction(conn):
        state = read_state(conn)
        if state.application_id != APPLICATION_ID:
            return CheckReport(False, [
                f"not a spark_queue store: application_id is {state.application_id}, "
                f"a store has {APPLICATION_ID} ({state.tables} tables)."
            ])
        if state.user_version > latest_version():
            problems.append(
                f"schema version {state.user_version} is newer than this spark_queue knows "
                f"({latest_version()}); only its known tables were checked."
            )
        problems.extend(
            f"table {table} row {rowid}: no parent row in {parent}"
            for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check")
        )
        if not offsets_are_unique(conn):
            problems.append(
                "table sq_events has lost its primary key (topic_id, offset): another SQLite "
                "client rebuilt it, so offsets may repeat. Restore a backup."
            )
        problems.extend(_topic_problems(conn))
        problems.extend(_setting_problems(conn))
        problems.extend(_event_problems(conn))
        problems.extend(_consumer_problems(conn))
        problems.extend(_time_mark_problems(conn))
        problems.extend(replica_mark.mark_problems(conn))
        warnings = () if problems else tuple(_held_back_warnings(conn))
    return CheckReport(not problems, problems, warnings)


def _held_back_warnings(conn: apsw.Connection) -> Iterator[str]:
    limit_ms = defaults.HELD_BACK_WARN_MS
    for held in housekeeping.held_back(conn, now_ms()):
        if held.held_ms > limit_ms:
            yield (
                f"consumer {held.consumer!r} holds back retention of topic {held.topic!r}: "
                f"{held.events} events retention would delete are kept for it, the oldest "
                f"{format_duration_ms(held.held_ms)} older than what retention keeps (warned "
                f"past {format_duration_ms(limit_ms)}). If it is abandoned, delete it: "
                f"`sqliteq consumer delete PATH {held.consumer}`." + _queries_hint(conn, held)
            )


def _queries_hint(conn: apsw.Connection, held: housekeeping.HeldBack) -> str:
    """The positions of the streaming queries under the name, lowest (the holder) first."""
    tid = topic_reads.topic_id(conn, held.topic)
    readers = sorted(consumer_positions.readers_of(conn, held.consumer, tid), key=lambda r: r[1])
    if not readers:
        return ""
    listed = ", ".join(f"{reader} at {offset}" for reader, offset in readers)
    return (f" Its streaming queries' positions: {listed}; a stopped one alone: `sqliteq "
            f"consumer delete PATH {held.consumer} --query {readers[0][0]}`.")


def _bad_name(name: object, kind: str) -> str | None:
    try:
        validate_name(name, kind)
    except InvalidNameError as exc:
        return str(exc)
    return None


def _topic_problems(conn: apsw.Connection) -> Iterator[str]:
    for name, count, low, high, nxt in conn.execute(
        "SELECT t.name, count(e.offset), min(e.offset), max(e.offset), t.next_offset "
        "FROM sq_topics t LEFT JOIN sq_events e ON e.topic_id = t.id GROUP BY t.id "
        "ORDER BY t.name"
    ):
        bad = _bad_name(name, "topic")
        if bad:
            yield f"topic {name!r}: {bad} Readers and the CLI cannot name it; rename it."
        if count and high - low + 1 != count:
            yield (
                f"topic {name!r}: offsets {low}..{high} hold {count} events; offsets are "
                "no longer dense (a hole, left by a delete that was not a prefix). Reads of "
                "the range fail with CorruptStoreError; restore a backup."
            )
        if count and high < nxt - 1:
            yield (
                f"topic {name!r}: offsets {high + 1}..{nxt - 1} are missing below next_offset "
                f"{nxt}; offsets are no longer dense (the newest events were deleted). Reads "
                "of the range fail with CorruptStoreError; restore a backup."
            )
        if count and high >= nxt:
            yield (
                f"topic {name!r}: events at offsets {max(low, nxt)}..{high} are at or above "
                f"next_offset {nxt} (inserted without advancing sq_topics.next_offset); "
                "readers do not see them and the next publish fails. Set next_offset to "
                f"{high + 1} in the same transaction as such inserts, or publish through "
                "the sq_publish view."
            )


def _setting_problems(conn: apsw.Connection) -> Iterator[str]:
    """Stored settings against their declaration: what the schema's CHECK constraints let
    another client write (text compares above every number), which housekeeping skips."""
    for name, retention_ms, retention_rows in conn.execute(
        "SELECT name, retention_ms, retention_rows FROM sq_topics ORDER BY name"
    ):
        for column, value in (("retention_ms", retention_ms), ("retention_rows", retention_rows)):
            problem = stored_problem(TOPIC_SETTING[column], value)
            if problem is not None:
                yield bad_retention(name, column, problem)
    columns = [setting.name for setting in QUEUE_SETTINGS]
    # ``columns`` are the declared settings' names, never user text.
    for name, *values in conn.execute(
        f"SELECT name, {', '.join(columns)} FROM sq_queues ORDER BY name"
    ):
        yield from bad_settings(name, dict(zip(columns, values, strict=True)))


# One pass over the events: the first rule each row breaks, or no row.
_EVENT_PROBLEMS_SQL = """
SELECT t.name, e.offset, CASE
    WHEN e.value_type = 0 AND typeof(e.value) NOT IN ('blob', 'null')
        THEN 'value_type 0 (bytes) holds a ' || typeof(e.value) || ' value, not a BLOB'
    WHEN e.value_type = 1 AND typeof(e.value) NOT IN ('text', 'null')
        THEN 'value_type 1 (text) holds a ' || typeof(e.value) || ' value, not TEXT'
    WHEN e.value_type = 2 AND typeof(e.value) != 'text'
        THEN 'value_type 2 (json) holds a ' || typeof(e.value) || ' value, not JSON TEXT'
    WHEN e.value_type = 2 AND NOT json_valid(e.value)
        THEN 'value_type 2 (json) holds text that is not valid JSON'
    WHEN typeof(e.key) NOT IN ('text', 'blob', 'null')
        THEN 'key is a ' || typeof(e.key) || ', not TEXT, BLOB or NULL'
    WHEN e.headers IS NULL THEN NULL
    WHEN typeof(e.headers) != 'text' OR NOT json_valid(e.headers)
        THEN 'headers are not JSON text'
    WHEN json_type(e.headers) != 'object'
        THEN 'headers are JSON but not an object'
    WHEN EXISTS (SELECT 1 FROM json_each(e.headers) WHERE type != 'text')
        THEN 'headers hold a value that is not a string'
    END AS problem
FROM sq_events e JOIN sq_topics t ON t.id = e.topic_id
WHERE problem IS NOT NULL
ORDER BY t.name, e.offset
"""


def _event_problems(conn: apsw.Connection) -> Iterator[str]:
    found: dict[tuple[str, str], list[int]] = {}
    for name, offset, problem in conn.execute(_EVENT_PROBLEMS_SQL):
        found.setdefault((name, problem), []).append(offset)
    for (name, problem), offsets in found.items():
        shown = ", ".join(map(str, offsets[:_EXAMPLES])) + (", ..." if len(offsets) > 5 else "")
        yield (
            f"topic {name!r}: {len(offsets)} event(s) where {problem} (offsets {shown}); "
            "a writer outside spark_queue stored them, and reading them fails with "
            "CorruptStoreError. Republish them correctly (e.g. through the sq_publish view)."
        )


# Each time mark against its run's events and the mark before it (time_marks.py): a
# maximum below an event of its run, or below the mark before it, would make a lookup
# skip events; a run that does not start where the one before ended, or ends past the
# topic's next offset, no longer describes the topic.
_TIME_MARKS_SQL = """
SELECT name, offset, end_offset, max_ts_ms, newest, previous, previous_end, next_offset FROM (
    SELECT t.name, m.offset, m.end_offset, m.max_ts_ms, t.next_offset,
           (SELECT max(e.ts_ms) FROM sq_events e WHERE e.topic_id = m.topic_id
            AND e.offset >= m.offset AND e.offset < m.end_offset) AS newest,
           lag(m.max_ts_ms) OVER w AS previous, lag(m.end_offset) OVER w AS previous_end
    FROM sq_time_marks m JOIN sq_topics t ON t.id = m.topic_id
    WINDOW w AS (PARTITION BY m.topic_id ORDER BY m.offset)
)
WHERE newest > max_ts_ms OR previous > max_ts_ms OR previous_end != offset
   OR end_offset > next_offset
ORDER BY name, offset
"""


def _time_mark_problems(conn: apsw.Connection) -> Iterator[str]:
    for name, start, end, top, newest, previous, previous_end, latest in conn.execute(
        _TIME_MARKS_SQL
    ):
        if newest is not None and newest > top:
            why = f"its maximum {top} is below the timestamp {newest} of an event in the run"
        elif previous is not None and previous > top:
            why = f"its maximum {top} is below the mark before it ({previous})"
        elif previous_end is not None and previous_end != start:
            why = f"the run before it ends at {previous_end}"
        else:
            why = f"it ends past the topic's next offset {latest}"
        yield (
            f"topic {name!r}: the time mark of offsets {start}..{end - 1} is wrong: {why}; "
            "timestamp lookups (startingTimestamp, offset_for_timestamp, retention by age) "
            "could skip events. Another SQLite client changed sq_time_marks; delete the "
            "topic's marks (DELETE FROM sq_time_marks WHERE topic_id = (SELECT id FROM "
            f"sq_topics WHERE name = '{name}')): lookups then scan the events, and later "
            "publishes mark them again."
        )


def _consumer_problems(conn: apsw.Connection) -> Iterator[str]:
    for consumer, topic, saved, latest in conn.execute(
        "SELECT c.consumer, t.name, c.next_offset, t.next_offset FROM sq_consumers c "
        "JOIN sq_topics t ON t.id = c.topic_id ORDER BY c.consumer, t.name"
    ):
        bad = _bad_name(consumer, "consumer")
        if bad:
            yield f"consumer {consumer!r}: {bad}"
        if saved > latest:
            yield (
                f"consumer {consumer!r} of topic {topic!r}: saved offset {saved} is beyond the "
                f"topic's latest offset {latest}; it would skip events published later. "
                f"Reset it: store.commit_offsets({consumer!r}, {{{topic!r}: {latest}}}, "
                "reset=True)."
            )
