"""Retention: delete old events from the front of a topic.

Deletion always removes a prefix of offsets, so a topic stays dense from its
earliest offset on. Events at or above the lowest saved consumer offset are
kept unless the caller forces it: a consumer that has not read them yet must
not lose them silently.
"""

from __future__ import annotations

from typing import NamedTuple

import apsw

from spark_queue.errors import OptionError
from spark_queue.setting_table import TOPIC_SETTING
from spark_queue.store.file.arguments import check_optional_int
from spark_queue.store.file.connection import Row, one_row
from spark_queue.store.streams import time_marks
from spark_queue.store.streams.topic_log import bounds_of, now_ms, topic_id


class PruneResult(NamedTuple):
    topic: str
    deleted: int
    earliest_before: int
    earliest_after: int
    # The consumer whose saved offset stopped deletion short, if one did.
    held_by: str | None


def set_retention(
    conn: apsw.Connection, topic: str, *, retention_ms: int | None, retention_rows: int | None
) -> None:
    """Store the topic's default retention (None clears a limit)."""
    for name, value in (("retention_ms", retention_ms), ("retention_rows", retention_rows)):
        check_optional_int(value, name, low=int(TOPIC_SETTING[name].low), error=OptionError,
                           owner="retention", none_means="no limit")
    conn.execute(
        "UPDATE sq_topics SET retention_ms = ?, retention_rows = ? WHERE id = ?",
        (retention_ms, retention_rows, topic_id(conn, topic)),
    )


def topic_ids(conn: apsw.Connection) -> list[tuple[int, str]]:
    """Every topic's ``(id, name)`` by name, names unchecked (see :func:`prune_id`)."""
    rows: list[Row] = conn.execute("SELECT id, name FROM sq_topics ORDER BY name").fetchall()
    return rows


def prune_id(
    conn: apsw.Connection,
    tid: int,
    topic: str,
    *,
    retention_ms: int | None = None,
    retention_rows: int | None = None,
    force: bool = False,
    at_ms: int | None = None,
) -> PruneResult:
    """:func:`prune` of the topic with id ``tid``; ``topic`` is only its label.

    Pruning all topics goes by id, so a topic whose name another SQLite client
    set against the naming rule is pruned like the others instead of stopping
    them (``tests/store/streams/test_foreign_writers.py``).
    """
    stored_ms, stored_rows = one_row(
        conn.execute("SELECT retention_ms, retention_rows FROM sq_topics WHERE id = ?", (tid,))
    )
    retention_ms = stored_ms if retention_ms is None else retention_ms
    retention_rows = stored_rows if retention_rows is None else retention_rows
    for name, value in (("retention_ms", retention_ms), ("retention_rows", retention_rows)):
        check_optional_int(value, name, error=OptionError, owner="prune", none_means="no limit")
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
    held_by = None
    if not force:
        low = conn.execute(
            "SELECT consumer, next_offset FROM sq_consumers WHERE topic_id = ? "
            "ORDER BY next_offset, consumer LIMIT 1",
            (tid,),
        ).fetchone()
        if low is not None and low[1] < cut:
            held_by, cut = low[0], max(earliest, low[1])
    deleted = 0
    if cut > earliest:
        conn.execute("DELETE FROM sq_events WHERE topic_id = ? AND offset < ?", (tid, cut))
        deleted = conn.changes()
        time_marks.forget_before(conn, tid, cut)
    return PruneResult(topic, deleted, earliest, max(earliest, cut), held_by)
