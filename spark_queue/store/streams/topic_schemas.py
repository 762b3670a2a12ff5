"""A topic's schema in the file: its versions, the change rules, and the check at publish.

``set_schema`` stores a new version (Spark DDL, canonical), its flattened check
(:mod:`~spark_queue.store.streams.schema_fields`) and the offset from which events are checked
against it, in the caller's write transaction: every event at or past that offset was checked
against it by whichever writer stored it (docs/schemas.md has the SQL that reads an event's
version).
:func:`check_for` is what :func:`~spark_queue.store.streams.event_log.open_log` attaches to
a topic, and :meth:`TopicCheck.check` what ``write_events`` runs before its insert, so every
Python path holds the schema; the ``sq_publish`` trigger holds foreign clients to it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, NamedTuple

import apsw
import pyarrow as pa

from spark_queue.errors import (
    ArgumentError,
    SchemaCompatibilityError,
    SchemaMismatchError,
)
from spark_queue.store.file.backup import BackupSource
from spark_queue.store.file.connection import now_ms
from spark_queue.store.file.schema import TOPIC_SCHEMAS_VERSION
from spark_queue.store.file.sqlite_errors import translate_errors
from spark_queue.store.streams import schema_json
from spark_queue.store.streams.schema_ddl import Field, Schema, SqlType, parse_schema
from spark_queue.store.streams.schema_fields import ValueCheck
from spark_queue.store.streams.schema_rows import flatten

ON_INVALID = ("reject", "quarantine")
COMPATIBILITY = ("backward", "none")


class TopicSchema(NamedTuple):
    """One version of a topic's schema, as stored."""

    topic: str
    version: int
    ddl: str
    on_invalid: str
    compatibility: str
    from_offset: int
    created_ms: int

    def json_schema(self) -> dict[str, Any]:
        """This version as a JSON Schema document (draft 2020-12), for a Kafka side's
        registry (:mod:`~spark_queue.store.streams.schema_json`)."""
        return schema_json.json_schema(self.ddl, self.topic)

    def all_fit(self, values: Sequence[Any] | pa.Array | pa.ChunkedArray,
                objects: Sequence[Any] | None = None) -> bool:
        """Whether every stored-form value fits this version: the check ``write_events``
        runs, for a writer that checks where it encodes (the Spark sink's executors) and
        marks its chunk :meth:`checked` so the commit need not check it again. ``objects``:
        the Python objects the values were encoded from with the store's codec, one each,
        read as given when they can be (``ValueCheck.fits_objects``); an Arrow ``values``
        is read into Python only when they cannot."""
        check = _compiled(self.ddl)
        if objects and check.fits_objects(objects):
            return True
        if isinstance(values, pa.Array | pa.ChunkedArray):
            values = values.to_pylist()
        problem = check.problem
        return all(problem(value) is None for value in values)

    def simple_string(self) -> str:
        """This version's columns as Spark's ``StructType.simpleString()`` writes them
        (``struct<device:string,temp:double>``): a reader tells by it which version a
        DataFrame's columns came from, without pyspark here."""
        return parse_schema(self.ddl).simple()

    @property
    def checked(self) -> CheckedAgainst:
        """The mark of a chunk whose values :meth:`all_fit` this version."""
        return CheckedAgainst(self.version, self.ddl)


class CheckedAgainst(NamedTuple):
    """A topic schema version a writer checked a chunk's values against, all fitting
    (:meth:`TopicSchema.all_fit`): ``write_events`` skips its own check of that chunk when
    the topic's current version is this one, DDL and all (a topic deleted and created anew
    numbers its versions from 1 again), and checks it as any other otherwise."""

    version: int
    ddl: str


class Quarantined(NamedTuple):
    """The answer to a publish whose event went to the topic's quarantine, not the topic
    (``on_invalid="quarantine"``): ``quarantined`` is the explicit flag, ``next_offset`` the
    offset the event would have taken (the next stored event takes it), ``quarantine_id`` its
    row in ``sq_quarantine``."""

    topic: str
    quarantine_id: int
    next_offset: int
    reason: str
    quarantined: bool = True


#: A write's columns in stored form (write_events' arguments): values, value types, stamps,
#: keys, headers; each of the last four one value (or None) for all rows, or one per row.
Columns = tuple[Sequence[Any], Any, Any, Any, Any]


class TopicCheck:
    """The schema a topic's writes are checked against (one version), compiled once per DDL;
    made per opened log, so ``quarantined`` holds what this log's writes quarantined, for
    the caller to answer (publish_one pops it)."""

    __slots__ = ("version", "values", "on_invalid", "quarantined", "ddl")

    def __init__(self, version: int, values: ValueCheck, on_invalid: str = "reject",
                 ddl: str = "") -> None:
        self.version = version
        self.values = values
        self.on_invalid = on_invalid
        self.quarantined: list[Quarantined] = []
        self.ddl = ddl

    def checked_by(self, mark: CheckedAgainst | None) -> bool:
        """Whether a chunk marked ``mark`` was checked against this very version."""
        return mark is not None and mark.version == self.version and mark.ddl == self.ddl

    def fit_as_given(self, originals: Sequence[Any] | None) -> bool:
        """Whether the Python objects a write's values were encoded from all fit, checked
        as given (:meth:`ValueCheck.fits_objects`); False: check the stored values."""
        return originals is not None and self.values.fits_objects(originals)

    def hold(
        self, conn: apsw.Connection, topic: str, topic_id: int, next_offset: int,
        columns: Columns, rows: int | Sequence[int], writer: str = "python",
    ) -> Columns | None:
        """Hold ``columns`` to the schema before they are written: with ``reject``,
        :meth:`check` (raises); with ``quarantine``, the rows that fail go to sq_quarantine
        and the columns of the rest are returned (None: every row fits, write as given)."""
        values = columns[0]
        if self.on_invalid == "reject":
            self.check(topic, values, rows)
            return None
        problem = self.values.problem
        reasons = [problem(value) for value in values]
        if reasons.count(None) == len(reasons):
            return None
        kept = [i for i, reason in enumerate(reasons) if reason is None]
        stored = 0
        for index, reason in enumerate(reasons):
            if reason is None:
                stored += 1
                continue
            row = rows + index if isinstance(rows, int) else rows[index]
            self.quarantined.append(self.quarantine(
                conn, topic, topic_id, next_offset + stored, writer, row,
                [_cell(column, index) for column in columns], reason))
        value_types, ts_ms, keys, headers = (
            column if _one_for_all(column) else [column[i] for i in kept]
            for column in columns[1:])
        return [values[i] for i in kept], value_types, ts_ms, keys, headers

    def quarantine(
        self, conn: apsw.Connection, topic: str, topic_id: int, next_offset: int, writer: str,
        row: int | None, cells: Sequence[Any], reason: str,
    ) -> Quarantined:
        """Keep one event (``cells``: value, value type, stamp, key, headers) aside."""
        value, value_type, ts_ms, key, headers = cells
        conn.execute(
            "INSERT INTO sq_quarantine (topic_id, schema_version, next_offset, writer, "
            "batch_row, ts_ms, key, value, value_type, headers, reason, quarantined_ms) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (topic_id, self.version, next_offset, writer, row, ts_ms, key, value, value_type,
             headers, reason, now_ms()))
        conn.execute("UPDATE sq_topics SET quarantined_total = quarantined_total + 1 "
                     "WHERE id = ?", (topic_id,))
        return Quarantined(topic, conn.last_insert_rowid(), next_offset, reason)

    def check(self, topic: str, values: Sequence[Any], rows: int | Sequence[int]) -> None:
        """SchemaMismatchError naming the first stored value that fails (its batch position:
        ``rows`` is the first value's, or each one's), the field, the type and what it got."""
        problem = self.values.problem
        for index, value in enumerate(values):
            if problem(value) is not None:
                row = rows + index if isinstance(rows, int) else rows[index]
                error = self.error(topic, value, row)
                assert error is not None
                raise error

    def error(self, topic: str, value: Any, row: int) -> SchemaMismatchError | None:
        """The refusal of one stored value (item ``row`` of its batch), or None if it fits."""
        reason = self.values.problem(value)
        if reason is None:
            return None
        return SchemaMismatchError(
            f"topic {topic!r} (schema version {self.version}): item {row} of the batch: "
            f"{reason}. Nothing of the batch was published; publish values that fit the "
            f"schema (`sqliteq topic schema show PATH {topic}`), or change it: "
            "`sqliteq topic schema set PATH TOPIC 'DDL'`.")


def _one_for_all(column: Any) -> bool:
    """Whether a write column is one value for every row (a value type or stamp as an int,
    keys or headers as None) rather than one per row."""
    return column is None or isinstance(column, int)


def _cell(column: Any, index: int) -> Any:
    return column if _one_for_all(column) else column[index]


@functools.lru_cache(maxsize=64)
def _compiled(ddl: str) -> ValueCheck:
    return ValueCheck(flatten(parse_schema(ddl)))


_CURRENT = ("SELECT version, ddl, on_invalid FROM sq_topic_schemas WHERE topic_id = ? "
            "ORDER BY version DESC LIMIT 1")


def check_for(conn: apsw.Connection, topic_id: int) -> TopicCheck | None:
    """The topic's current check, or None without a schema (one index probe)."""
    row = conn.execute(_CURRENT, (topic_id,)).fetchone()
    if row is None:
        return None
    return TopicCheck(row[0], _compiled(row[1]), row[2], row[1])


_COLUMNS = ("SELECT t.name, s.version, s.ddl, s.on_invalid, s.compatibility, s.from_offset, "
            "s.created_ms FROM sq_topic_schemas s JOIN sq_topics t ON t.id = s.topic_id ")


def current(conn: apsw.Connection, topic: str) -> TopicSchema | None:
    """The topic's newest schema version, or None (the topic has none, or does not exist)."""
    row = conn.execute(_COLUMNS + "WHERE t.name = ? ORDER BY s.version DESC LIMIT 1",
                       (topic,)).fetchone()
    return None if row is None else TopicSchema(*row)


def current_in_file(path: str, topic: str, *, busy_timeout_ms: int) -> TopicSchema | None:
    """The topic's newest schema version, read from the store file at ``path`` in ONE
    opening that writes and migrates nothing (:class:`BackupSource`: refuses a file that is
    no store, or an empty one); None for a file older than topic schemas. The sink's
    driver checks its target and reads the schema its tasks check against in this one
    opening, as each micro-batch builds its writer."""
    with BackupSource(path, busy_timeout_ms=busy_timeout_ms) as source:
        if source.version < TOPIC_SCHEMAS_VERSION:
            return None
        with translate_errors(path):  # one SELECT: its own snapshot
            return current(source.conn, topic)


def history(conn: apsw.Connection, topic: str) -> list[TopicSchema]:
    """Every version of the topic's schema, oldest first."""
    return [TopicSchema(*row) for row in conn.execute(
        _COLUMNS + "WHERE t.name = ? ORDER BY s.version", (topic,))]


def all_current(conn: apsw.Connection) -> dict[str, TopicSchema]:
    """Each topic's newest schema version, by topic name (for ``sqliteq topics``)."""
    return {row[0]: TopicSchema(*row) for row in conn.execute(
        _COLUMNS + "WHERE s.version = (SELECT max(version) FROM sq_topic_schemas "
        "WHERE topic_id = s.topic_id)")}


def set_schema(
    conn: apsw.Connection, topic_id: int, topic: str, next_offset: int, ddl: str, *,
    on_invalid: str = "reject", compatibility: str = "backward",
) -> TopicSchema:
    """Store ``ddl`` as the topic's next schema version, in the caller's write transaction;
    return it. The same schema and settings as the newest version store nothing and return
    it. ``compatibility`` is checked against the newest version (``backward``: a new field
    must be nullable; no field is removed, changes its type or becomes NOT NULL)."""
    _choice(on_invalid, ON_INVALID, "on_invalid", "--on-invalid")
    _choice(compatibility, COMPATIBILITY, "compatibility", "--compatibility")
    schema = parse_schema(ddl)
    rows = flatten(schema)
    canonical = schema.ddl()
    newest = current(conn, topic)
    if newest is not None:
        if (newest.ddl, newest.on_invalid, newest.compatibility) == (
                canonical, on_invalid, compatibility):
            return newest
        if compatibility == "backward":
            problem = backward_problem(parse_schema(newest.ddl), schema)
            if problem is not None:
                raise SchemaCompatibilityError(
                    f"topic {topic!r}: the new schema is not backward compatible with "
                    f"version {newest.version}: {problem}. Nothing was changed. Keep the "
                    "field as it was and add new nullable fields, or set the schema with "
                    "compatibility='none' (--compatibility none), which checks nothing.")
    version = 1 if newest is None else newest.version + 1
    created = now_ms()
    conn.execute(
        "INSERT INTO sq_topic_schemas (topic_id, version, ddl, on_invalid, compatibility, "
        "from_offset, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (topic_id, version, canonical, on_invalid, compatibility, next_offset, created))
    conn.executemany(
        "INSERT INTO sq_schema_fields (topic_id, version, seq, label, container, "
        "container_type, path, parent, types, lo, hi, format, required, expects) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(topic_id, version, *row) for row in rows])
    return TopicSchema(topic, version, canonical, on_invalid, compatibility, next_offset,
                       created)


def _choice(value: str, allowed: tuple[str, ...], name: str, flag: str) -> None:
    if value not in allowed:
        raise ArgumentError(f"topic schema {name} must be one of {', '.join(allowed)}; got "
                            f"{value!r} (the CLI's {flag}).")


def backward_problem(old: Schema, new: Schema) -> str | None:
    """Why events written under ``old`` cannot be read as ``new`` (the ``backward`` rule),
    or None: the first field removed, changed in type, made NOT NULL, or added NOT NULL."""
    return _fields_problem(old.fields, new.fields, "")


def _fields_problem(old: tuple[Field, ...], new: tuple[Field, ...], prefix: str) -> str | None:
    before = {f.name.lower(): f for f in old}
    after = {f.name.lower(): f for f in new}
    for key, field in before.items():
        label = prefix + field.name
        if key not in after:
            return f"field {label} is removed (rule: backward keeps every field)"
        problem = _field_problem(field, after[key], label)
        if problem is not None:
            return problem
    for key, field in after.items():
        if key not in before and not field.nullable:
            return (f"field {prefix + field.name} is new and NOT NULL, which events written "
                    "before it lack (rule: backward adds only nullable fields)")
    return None


def _field_problem(old: Field, new: Field, label: str) -> str | None:
    if old.nullable and not new.nullable:
        return (f"field {label} becomes NOT NULL, and earlier events may hold null "
                "(rule: backward never makes a field NOT NULL)")
    return _type_problem(old.type, new.type, label)


def _type_problem(old: SqlType, new: SqlType, label: str) -> str | None:
    if old.name == new.name == "STRUCT":
        return _fields_problem(old.fields, new.fields, label + ".")
    if old.name == new.name and old.name in ("ARRAY", "MAP"):
        assert old.element is not None and new.element is not None
        return _type_problem(old.element, new.element, label + "[]")
    if old.ddl() != new.ddl():
        return (f"field {label} changes type from {old.ddl()} to {new.ddl()} (rule: backward "
                "keeps each field's type)")
    return None
