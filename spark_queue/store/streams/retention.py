"""Retention: delete old events from the front of a topic, in small steps.

Deletion always removes a prefix of offsets, so a topic stays dense from its
earliest offset on. Events at or above the lowest saved consumer offset are
kept unless the caller forces it: a consumer that has not read them yet must
not lose them silently.

A backlog is deleted in steps of at most ``STEP_ROWS`` events and ``STEP_BYTES`` bytes,
each its own write transaction (:mod:`spark_queue.store.file.steps`): a writer beside a
prune waits for one step at most, however large the backlog and its events.

A topic's stored retention that another SQLite client wrote against the rule (text, 0)
raises :class:`~spark_queue.errors.CorruptStoreError` naming it; housekeeping reports it
and goes on with the other topics (``problems`` of :func:`prune_topics`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import NamedTuple

import apsw

from spark_queue.errors import CorruptStoreError, OptionError
from spark_queue.setting_table import TOPIC_SETTING, check_setting, stored_problem
from spark_queue.store.file.arguments import check_optional_int
from spark_queue.store.file.connection import Row, StoreConnection, now_ms, one_row
from spark_queue.store.file.steps import (
    STEP,
    Budget,
    Done,
    MayStep,
    in_steps,
    rows_within,
    size_sql,
)
from spark_queue.store.streams import consumer_positions, time_marks
from spark_queue.store.streams.topic_reads import bounds_of, topic_id


class PruneResult(NamedTuple):
    topic: str
    deleted: int
    earliest_before: int
    earliest_after: int
    # The consumer whose saved offset stopped deletion short, if one did.
    held_by: str | None


class RetentionPlan(NamedTuple):
    """Where retention would cut a topic now: ``cut`` honours the consumers, ``wanted``
    does not; ``held_by`` names the lowest consumer when ``cut < wanted``."""

    earliest: int
    cut: int
    wanted: int
    held_by: str | None


def set_retention(
    conn: apsw.Connection, topic: str, *, retention_ms: int | None, retention_rows: int | None
) -> None:
    """Store the topic's default retention (None clears a limit)."""
    for name, value in (("retention_ms", retention_ms), ("retention_rows", retention_rows)):
        check_setting(TOPIC_SETTING[name], value, error=OptionError, owner="retention")
    conn.execute(
        "UPDATE sq_topics SET retention_ms = ?, retention_rows = ? WHERE id = ?",
        (retention_ms, retention_rows, topic_id(conn, topic)),
    )


def topic_ids(conn: apsw.Connection) -> list[tuple[int, str]]:
    """Every topic's ``(id, name)`` by name, names unchecked (see :func:`prune_id`)."""
    rows: list[Row] = conn.execute("SELECT id, name FROM sq_topics ORDER BY name").fetchall()
    return rows


def plan(
    conn: apsw.Connection,
    tid: int,
    *,
    retention_ms: int | None = None,
    retention_rows: int | None = None,
    force: bool = False,
    at_ms: int | None = None,
) -> RetentionPlan:
    """Where retention cuts topic ``tid`` (given limits, else its stored ones); reads only.
    A given limit is checked as the topic setting it overrides (OptionError); a stored one
    that breaks the rule raises CorruptStoreError naming the topic and the fix."""
    name_, stored_ms, stored_rows = one_row(conn.execute(
        "SELECT name, retention_ms, retention_rows FROM sq_topics WHERE id = ?", (tid,)))
    for name, value in (("retention_ms", retention_ms), ("retention_rows", retention_rows)):
        check_setting(TOPIC_SETTING[name], value, error=OptionError, owner="prune")
    for name, given, value in (("retention_ms", retention_ms, stored_ms),
                               ("retention_rows", retention_rows, stored_rows)):
        problem = None if given is not None else stored_problem(TOPIC_SETTING[name], value)
        if problem is not None:
            raise CorruptStoreError(bad_retention(name_, name, problem))
    retention_ms = stored_ms if retention_ms is None else retention_ms
    retention_rows = stored_rows if retention_rows is None else retention_rows
    check_optional_int(at_ms, "at_ms", error=OptionError, owner="prune", none_means="now")
    earliest, latest = bounds_of(conn, tid)
    cut = earliest
    if retention_rows is not None:
        cut = max(cut, latest - retention_rows)
    if retention_ms is not None:
        cutoff_ts = (now_ms() if at_ms is None else at_ms) - retention_ms
        # Everything before the first event that is young enough goes.
        young = time_marks.first_at_or_after(conn, tid, cutoff_ts)
        cut = max(cut, latest if young is None else young)
    wanted, held_by = cut, None
    if not force:
        # Every query reading under a shared name holds at its own position.
        low = consumer_positions.lowest_hold(conn, tid)
        if low is not None and low[1] < cut:
            held_by, cut = low[0], max(earliest, low[1])
    return RetentionPlan(earliest, cut, wanted, held_by)


def bad_retention(topic: object, column: str, problem: str) -> str:
    """What a topic's stored retention that breaks the rule says (check, housekeeping)."""
    flag = TOPIC_SETTING[column].flag
    return (f"topic {topic!r}: sq_topics.{column} {problem} (another SQLite client wrote "
            f"it); retention skips the topic until it is set again: `sqliteq topic config "
            f"PATH TOPIC {flag} ...` or store.topic(name).configure(...)")


def prune_id(
    conn: apsw.Connection,
    tid: int,
    topic: str,
    *,
    retention_ms: int | None = None,
    retention_rows: int | None = None,
    force: bool = False,
    at_ms: int | None = None,
    budget: Budget | None = None,
) -> tuple[PruneResult, bool]:
    """One step of :func:`prune_topics` on the topic with id ``tid`` (``topic`` is only its
    label), in the caller's transaction: within ``budget`` (None: all); and whether
    retention wants more of the topic deleted after it.

    Pruning all topics goes by id, so a topic whose name another SQLite client
    set against the naming rule is pruned like the others instead of stopping
    them (``tests/store/streams/test_foreign_writers.py``).
    """
    where = plan(conn, tid, retention_ms=retention_ms, retention_rows=retention_rows,
                 force=force, at_ms=at_ms)
    cut = where.cut
    if budget is not None and cut > where.earliest:
        cut = where.earliest + rows_within(
            conn, f"SELECT {size_sql('key', 'value')} AS size FROM sq_events "
            "WHERE topic_id = ? AND offset >= ? ORDER BY offset LIMIT ?",
            (tid, where.earliest, min(cut - where.earliest, budget.rows)), budget)
    deleted = 0
    if cut > where.earliest:
        conn.execute("DELETE FROM sq_events WHERE topic_id = ? AND offset < ?", (tid, cut))
        deleted = conn.changes()
        time_marks.forget_before(conn, tid, cut)
    return (PruneResult(topic, deleted, where.earliest, max(where.earliest, cut), where.held_by),
            cut < where.cut)


def prune(
    file: StoreConnection,
    topic: str | None,
    *,
    retention_ms: int | None,
    retention_rows: int | None,
    force: bool,
    at_ms: int | None,
) -> list[PruneResult]:
    """:func:`prune_topics` of ``topic``, or of every topic (``Topic.prune``,
    ``Housekeeping.prune``)."""
    with file.read() as conn:
        # All by id, not by name: a topic a foreign writer named against the rule is
        # pruned like any other, and never stops the rest.
        ids = [(topic_id(conn, topic), topic)] if topic is not None else topic_ids(conn)
    return prune_topics(file, ids, retention_ms=retention_ms, retention_rows=retention_rows,
                        force=force, at_ms=at_ms)


def prune_topics(
    file: StoreConnection,
    ids: Iterable[tuple[int, str]],
    *,
    retention_ms: int | None = None,
    retention_rows: int | None = None,
    force: bool = False,
    at_ms: int | None = None,
    budget: Budget = STEP,
    may_step: MayStep | None = None,
    problems: list[str] | None = None,
) -> list[PruneResult]:
    """Apply retention to each topic of ``ids`` in steps within ``budget`` (rows and bytes),
    each step ONE write transaction (:func:`~spark_queue.store.file.steps.in_steps`); a
    topic with nothing to delete costs one read. The clock is read once, at the start, so a
    topic still being written ends its prune. ``may_step`` (inside each step's transaction)
    stops the whole prune when it answers False; the topics done so far are returned. With
    ``problems``, a topic whose stored retention breaks the rule is skipped and named there
    (housekeeping); without, its CorruptStoreError stops the prune."""
    at_ms = now_ms() if at_ms is None else at_ms
    results: list[PruneResult] = []
    for tid, name in ids:
        # Another client's unmarked events first, in bounded steps: else the plan below,
        # and each step's under the write lock, would scan all of them for the cut.
        def fold(conn: apsw.Connection, budget: Budget, tid: int = tid) -> Done:
            return Done(0, time_marks.fold_tail(conn, tid, budget.rows))

        with file.read() as conn:
            unmarked = time_marks.unmarked_tail(conn, tid)
        if unmarked >= time_marks.RUN and in_steps(
                file, fold, may_step=may_step, budget=budget) is None:
            return results
        try:
            with file.read() as conn:
                first = plan(conn, tid, retention_ms=retention_ms,
                             retention_rows=retention_rows, force=force, at_ms=at_ms)
        except CorruptStoreError as exc:
            if problems is None:
                raise
            problems.append(str(exc))
            continue
        if first.cut <= first.earliest:
            results.append(PruneResult(name, 0, first.earliest, first.earliest, first.held_by))
            continue
        last = [PruneResult(name, 0, first.earliest, first.earliest, first.held_by)]

        def step(conn: apsw.Connection, budget: Budget, tid: int = tid, name: str = name,
                 last: list[PruneResult] = last) -> Done:
            if conn.execute("SELECT 1 FROM sq_topics WHERE id = ?", (tid,)).fetchone() is None:
                return Done(0, False)  # deleted meanwhile
            last[0], more = prune_id(conn, tid, name, retention_ms=retention_ms,
                                     retention_rows=retention_rows, force=force, at_ms=at_ms,
                                     budget=budget)
            return Done(last[0].deleted, more)

        try:
            deleted = in_steps(file, step, may_step=may_step, budget=budget)
        except CorruptStoreError as exc:  # its retention was rewritten against the rule meanwhile
            if problems is None:
                raise
            problems.append(str(exc))
            continue
        if deleted is None:
            return results
        results.append(last[0]._replace(deleted=deleted, earliest_before=first.earliest))
    return results


# Retention's one vocabulary is the topic settings' (retention_ms, retention_rows, as
# Kafka's retention.ms); set_retention and prune took max_age_ms and max_rows before.
_DEPRECATED_RETENTION = {"max_age_ms": "retention_ms", "max_rows": "retention_rows"}


def retention_limits(
    method: str, retention_ms: int | None, retention_rows: int | None,
    deprecated: dict[str, int | None],
) -> tuple[int | None, int | None]:
    """The limits a Store method was given, its deprecated keyword names read (with a
    warning) as the new ones."""
    given = {"retention_ms": retention_ms, "retention_rows": retention_rows}
    for old, value in deprecated.items():
        new = _DEPRECATED_RETENTION.get(old)
        if new is None:
            raise TypeError(f"{method}() got an unexpected keyword argument {old!r}")
        if given[new] is not None:
            raise TypeError(f"{method}() got both {new!r} and its deprecated name {old!r}")
        warnings.warn(f"{method}({old}=...) is deprecated; use {new}=...",
                      DeprecationWarning, stacklevel=4)  # past the translating wrapper
        given[new] = value
    return given["retention_ms"], given["retention_rows"]
