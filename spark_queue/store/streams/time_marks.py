"""Find the first event at or after a time without an index entry per event.

A full index on ``(topic_id, ts_ms)`` costs a second B-tree insert for every
event written. ``sq_time_marks`` holds one row per run of consecutive offsets
(:data:`RUN` to ``2 * RUN - 1`` events; the newest run a migration made may
hold fewer) with the highest timestamp of the topic up to the run's end: a
running maximum, so it never decreases along the offsets even where
timestamps do (a foreign writer's clock, a ``Record``'s own ``timestamp_ms``).
The first event with ``ts_ms >= T`` then lies in the first run whose maximum
is ``>= T`` (every event before that run is older than ``T``), and a scan of
the events from that run's start finds it: exact, for any order of timestamps.

Events past the newest mark are scanned: this package's own most recent
events (a write marks the tail only once it holds :data:`RUN` events, so a
single publish writes no mark) and those written through ``sq_publish`` or
plain SQL by another client, which the next marking folds in. No writer has
to keep marks for a lookup to be right. Retention drops the marks of the runs
it deleted whole; a run it cut keeps its maximum, which can then only make a
lookup scan further, never answer wrong. A mark changed
by hand to a maximum below its events' could; ``check()`` finds that.
"""

from __future__ import annotations

import apsw

from spark_queue.store.file.connection import first_value

RUN = 4096  # events per mark: runs this package writes hold RUN to 2 * RUN - 1 events

# The newest mark's maximum: the running maximum of every marked event.
_LAST_MAX = "SELECT max_ts_ms FROM sq_time_marks WHERE topic_id = ? ORDER BY offset DESC LIMIT 1"


def mark(
    conn: apsw.Connection, tid: int, start: int, first: int, end: int, max_ts_ms: int
) -> None:
    """Mark the unmarked tail ``[start, end)`` of topic ``tid``: ``[first, end)`` was just
    written and reaches ``max_ts_ms``; ``[start, first)`` (this package's earlier events, or
    another client's) is folded in with one scan of just those events.

    The caller holds the write lock and calls this once the tail holds at
    least :data:`RUN` events, so the tail a lookup scans stays short without
    a mark statement per write. The tail is marked in runs of :data:`RUN`,
    the last one taking the remainder (fewer than ``2 * RUN`` events each),
    all with the running maximum: the newest mark's, the folded events' and
    ``max_ts_ms``, which bounds each run from above.
    """
    running = max_ts_ms
    for (older,) in conn.execute(_LAST_MAX, (tid,)):
        running = max(running, older)
    if start < first:
        folded = first_value(conn.execute(
            "SELECT max(ts_ms) FROM sq_events WHERE topic_id = ? AND offset >= ? AND offset < ?",
            (tid, start, first),
        ))
        if folded is not None:  # None: retention removed them
            running = max(running, folded)
    starts = list(range(start, end, RUN))
    if len(starts) > 1 and end - starts[-1] < RUN:
        starts.pop()
    for run_start, run_end in zip(starts, [*starts[1:], end], strict=True):
        conn.execute(
            "INSERT INTO sq_time_marks (topic_id, offset, end_offset, max_ts_ms) "
            "VALUES (?, ?, ?, ?)", (tid, run_start, run_end, running),
        )


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


# Where the unmarked tail of topic ?1 starts (the newest mark's end, else its first event,
# else its next offset; as event_log opens a topic) and where it ends.
_TAIL = (
    "SELECT coalesce((SELECT end_offset FROM sq_time_marks WHERE topic_id = t.id "
    "ORDER BY offset DESC LIMIT 1), (SELECT offset FROM sq_events WHERE topic_id = t.id "
    "ORDER BY offset LIMIT 1), t.next_offset), t.next_offset FROM sq_topics t WHERE t.id = ?"
)


def unmarked_tail(conn: apsw.Connection, tid: int) -> int:
    """How many events of topic ``tid`` lie past its newest mark (0: no such topic)."""
    row = conn.execute(_TAIL, (tid,)).fetchone()
    return 0 if row is None else int(row[1]) - int(row[0])


def fold_tail(conn: apsw.Connection, tid: int, most_rows: int) -> bool:
    """Mark whole runs of topic ``tid``'s unmarked tail, reading at most ``most_rows``
    events (caller's write transaction); True while whole runs are left unmarked.

    The tail is what another client wrote through ``sq_publish`` or plain SQL (this
    package's writes mark it once it holds :data:`RUN` events): unmarked, it is scanned by
    every time lookup, and retention's under the write lock, whatever its length.
    Housekeeping folds it in bounded steps first (``retention.prune_topics``;
    ``tests/store/streams/test_time_marks.py``). The writers' kept rows see the new
    marks: any commit moves the file's data version, and they read their topic again."""
    row = conn.execute(_TAIL, (tid,)).fetchone()
    if row is None:
        return False
    start, end = int(row[0]), int(row[1])
    runs = min(max(most_rows, RUN) // RUN, (end - start) // RUN)
    if runs == 0:
        return False
    stop = start + runs * RUN
    newest = first_value(conn.execute(
        "SELECT max(ts_ms) FROM sq_events WHERE topic_id = ? AND offset >= ? AND offset < ?",
        (tid, start, stop),
    ))
    if newest is None:  # retention removed them meanwhile: nothing to mark
        return False
    mark(conn, tid, start, start, stop, int(newest))
    return end - stop >= RUN
