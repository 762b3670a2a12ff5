"""Integrity checks of a store file (its backups: :mod:`spark_queue.store.file.backup`).

``check`` validates what SQLite cannot: the rules a writer outside
spark_queue (any SQLite client) can break. Each problem names the topic (or
consumer), the offsets and what is wrong; the reads that meet such a row
raise :class:`~spark_queue.errors.CorruptStoreError` with the same facts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

import apsw

from spark_queue import defaults
from spark_queue.errors import InvalidNameError, StoreError, StoreNotFoundError
from spark_queue.setting_table import QUEUE_SETTINGS, TOPIC_SETTING, stored_problem
from spark_queue.store.file import replica_mark, replicator_lease
from spark_queue.store.file.connection import (
    now_ms,
    read_transaction,
)
from spark_queue.store.file.names import validate_name
from spark_queue.store.file.schema import (
    APPLICATION_ID,
    latest_version,
    needs_migrating,
    read_state,
)
from spark_queue.store.floor import housekeeping
from spark_queue.store.queues.queue_config import bad_settings
from spark_queue.store.streams import consumer_positions, topic_reads
from spark_queue.store.streams.retention import bad_retention
from spark_queue.store.streams.topic_reads import offsets_are_unique
from spark_queue.times import format_duration_ms

# How many offsets a check problem lists before it says "..."
_EXAMPLES = 5

class CheckReport(NamedTuple):
    """``ok`` when nothing is wrong; ``warnings`` say what needs an operator but breaks no
    rule (a consumer holding retention back for long), and never make ``ok`` False."""

    ok: bool
    problems: list[str]
    warnings: tuple[str, ...] = ()


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
        report = check(conn)
        with read_transaction(conn):
            said = replicator_lease.warnings_of(conn, path)
        return report._replace(warnings=(*report.warnings, *said))
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
    """The holding positions of the streaming queries under the name, lowest (the holder)
    first, each with the time since its query last saved it."""
    tid = topic_reads.topic_id(conn, held.topic)
    readers = consumer_positions.readers_of(conn, held.consumer, tid)
    if not readers:
        return ""
    now = now_ms()
    listed = ", ".join(f"{p.reader} at {p.next_offset} (saved "
                       f"{format_duration_ms(max(0, now - p.updated_ms))} ago)" for p in readers)
    return (f" Its streaming queries' positions: {listed}; a stopped one alone: `sqliteq "
            f"consumer delete PATH {held.consumer} --query {readers[0].reader}` (one not "
            f"saved for {format_duration_ms(defaults.STOPPED_POSITION_HOLD_MS)} holds nothing).")


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
