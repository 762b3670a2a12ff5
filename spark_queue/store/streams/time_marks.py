"""Find the first event at or after a time without an index entry per event.

A full index on ``(topic_id, ts_ms)`` costs a second B-tree insert for every
event written. ``sq_time_marks`` holds one row per run of consecutive offsets
(at least :data:`RUN` events, except the newest run) with the highest
timestamp of the topic up to the run's end: a running maximum, so it never
decreases along the offsets even where timestamps do (a foreign writer's
clock, a ``Record``'s own ``timestamp_ms``). The first event with ``ts_ms >= T``
then lies in the first run whose maximum is ``>= T`` (every event before that
run is older than ``T``), and a scan of the events from that run's start finds
it: exact, for any order of timestamps.

Events past the newest mark (written through ``sq_publish`` or plain SQL by
another client) are scanned, and the next write through this package marks
them: no writer has to keep marks for a lookup to be right. Retention drops
the marks of the runs it deleted whole; a run it cut keeps its maximum, which
can then only make a lookup scan further, never answer wrong. A mark changed
by hand to a maximum below its events' could; ``check()`` finds that.
"""

from __future__ import annotations

import apsw

from spark_queue.store.file.connection import first_value

RUN = 4096  # events per mark: runs this package writes hold fewer than 2 * RUN events

_LAST = (
    "SELECT offset, end_offset, max_ts_ms FROM sq_time_marks WHERE topic_id = ? "
    "ORDER BY offset DESC LIMIT 1"
)


def mark(conn: apsw.Connection, tid: int, first: int, end: int, max_ts_ms: int) -> None:
    """Record that offsets ``[first, end)`` of topic ``tid``, just written, reach ``max_ts_ms``.

    The caller holds the write lock. A large write is marked in runs of
    :data:`RUN` (``max_ts_ms`` bounds each from above), so that a lookup never
    scans a whole batch. Events another client wrote since the newest mark
    (before ``first``) are folded in with one scan of just them.
    """
    for start in range(first, end, RUN):
        _mark_run(conn, tid, start, min(end, start + RUN), max_ts_ms)


def _mark_run(conn: apsw.Connection, tid: int, first: int, end: int, max_ts_ms: int) -> None:
    last = conn.execute(_LAST, (tid,)).fetchone()
    if last is None:
        start, running = first, max_ts_ms
        unmarked = _unmarked_max(conn, tid, None, first)
        if unmarked is not None:
            start, older = unmarked
            running = max(running, older)
        _insert(conn, tid, start, end, running)
        return
    offset, marked_end, running = last
    running = max(running, max_ts_ms)
    start = first
    if marked_end < first:
        unmarked = _unmarked_max(conn, tid, marked_end, first)
        if unmarked is not None:
            running = max(running, unmarked[1])
        start = marked_end
    if start - offset < RUN:
        conn.execute(
            "UPDATE sq_time_marks SET end_offset = ?, max_ts_ms = ? "
            "WHERE topic_id = ? AND offset = ?", (end, running, tid, offset),
        )
    else:
        _insert(conn, tid, start, end, running)


def _insert(conn: apsw.Connection, tid: int, start: int, end: int, running: int) -> None:
    conn.execute(
        "INSERT INTO sq_time_marks (topic_id, offset, end_offset, max_ts_ms) VALUES (?, ?, ?, ?)",
        (tid, start, end, running),
    )


def _unmarked_max(
    conn: apsw.Connection, tid: int, start: int | None, end: int
) -> tuple[int, int] | None:
    """(first offset, highest ts_ms) of the events in ``[start, end)``; None if there are none."""
    row = conn.execute(
        "SELECT min(offset), max(ts_ms) FROM sq_events WHERE topic_id = ? AND offset >= ? "
        "AND offset < ?", (tid, -1 if start is None else start, end),
    ).fetchone()
    return None if row is None or row[0] is None else (row[0], row[1])


def first_at_or_after(conn: apsw.Connection, tid: int, ts_ms: int) -> int | None:
    """The lowest offset of topic ``tid`` whose ``ts_ms >= ts_ms``; None if no event is."""
    # The running maximum never decreases along the offsets, so the run with the
    # smallest maximum >= ts_ms is also the first such run.
    start = first_value(conn.execute(
        "SELECT min(offset) FROM (SELECT offset FROM sq_time_marks WHERE topic_id = ? "
        "AND max_ts_ms >= ? ORDER BY max_ts_ms, offset LIMIT 1)", (tid, ts_ms),
    ))
    if start is None:  # every marked event is older: only the unmarked ones can be
        start = first_value(conn.execute(
            "SELECT max(end_offset) FROM sq_time_marks WHERE topic_id = ?", (tid,)
        ))
    found = conn.execute(
        "SELECT offset FROM sq_events WHERE topic_id = ? AND offset >= ? AND ts_ms >= ? "
        "ORDER BY offset LIMIT 1", (tid, -1 if start is None else start, ts_ms),
    ).fetchone()
    return None if found is None else found[0]


def forget_before(conn: apsw.Connection, tid: int, cut: int) -> None:
    """Drop the marks of runs that end at or before ``cut`` (retention deleted them whole)."""
    conn.execute("DELETE FROM sq_time_marks WHERE topic_id = ? AND end_offset <= ?", (tid, cut))


def forget_topic(conn: apsw.Connection, tid: int) -> None:
    conn.execute("DELETE FROM sq_time_marks WHERE topic_id = ?", (tid,))
