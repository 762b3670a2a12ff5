"""The batches a streaming query planned: the end its source chose for each start.

Spark logs a micro-batch's range (``offsets/N``) before running it, and a sink that keeps
a ledger (``sq_sink_commits``) skips a batch id it already committed. Hadoop's local file
system never fsyncs the checkpoint, so a power cut can leave ``offsets/N`` empty after the
sink committed batch N; once ``sqliteq checkpoint repair`` removes the torn file, Spark
plans batch N again from the end of batch N-1. Had events arrived since, a fresh plan
would cover more than the batch the ledger holds, and the ledger would skip the events
past the old end with it. So the source records the end it chose for a start, durably
(``synchronous=FULL`` for that one transaction, whatever the store's durability) before
Spark sees it, and hands back the recorded end when the same query plans from the same
start again (``tests/store/streams/test_planned_batches.py``).

A query is named by its ``reader`` id (the ``@reader`` its offsets carry under a
``consumer``). The record stays small: a query keeps its plans of the last
``PLANNED_BATCH_HOLD_MS`` (longer than the OS keeps writes unflushed) and its newest
``PLANNED_BATCHES_KEPT`` whatever their age; a query the name no longer has a position for
loses its plans once they are that old; deleting the consumer (or the reader) deletes them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import apsw

from spark_queue.defaults import PLANNED_BATCH_HOLD_MS, PLANNED_BATCHES_KEPT
from spark_queue.store.file.connection import HasStoreConnection, first_value, now_ms
from spark_queue.store.file.names import validate_name

# PRAGMA synchronous as it reads back (0-3), to put back the connection's own level.
_SYNCHRONOUS = {level: "PRAGMA synchronous=" + name
                for level, name in enumerate(("OFF", "NORMAL", "FULL", "EXTRA"))}


def _key(offsets: Mapping[str, int]) -> str:
    return json.dumps({topic: int(offsets[topic]) for topic in sorted(offsets)},
                      separators=(",", ":"))


def planned_end(
    store: HasStoreConnection, reader: str, start: Mapping[str, int]
) -> dict[str, int] | None:
    """The end ``reader`` recorded for a batch from ``start`` (``{topic: offset}``), or None;
    read-only, in the caller's snapshot when it holds one."""
    with store.file.read() as conn:
        row = conn.execute(
            "SELECT end_offsets FROM sq_planned_batches WHERE reader = ? AND start_offsets = ?",
            (reader, _key(start)),
        ).fetchone()
    if row is None:
        return None
    end = json.loads(row[0])
    return {str(topic): int(offset) for topic, offset in end.items()}


def record_planned_end(
    store: HasStoreConnection, consumer: str, reader: str, start: Mapping[str, int],
    end: Mapping[str, int],
) -> None:
    """Record that ``reader`` (a query under ``consumer``) planned ``[start, end)``, replacing
    an earlier end for that start, in one transaction fsynced before it returns (call it
    outside any transaction); forget the query's plans past their hold, and those of the
    name's queries that are gone."""
    validate_name(consumer, "consumer")
    validate_name(reader, "reader")
    conn = store.file.conn
    level = first_value(conn.execute("PRAGMA synchronous"))
    # A plan must survive what the sink's ledger survives: FULL syncs the WAL at commit.
    conn.execute("PRAGMA synchronous=FULL")
    try:
        with store.file.write() as tx:
            now = now_ms()
            tx.execute(
                "INSERT INTO sq_planned_batches (reader, start_offsets, consumer, end_offsets, "
                "planned_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT (reader, start_offsets) DO "
                "UPDATE SET end_offsets = excluded.end_offsets, "
                "planned_ms = excluded.planned_ms",
                (reader, _key(start), consumer, _key(end), now),
            )
            _prune(tx, consumer, reader, now - PLANNED_BATCH_HOLD_MS)
    finally:
        conn.execute(_SYNCHRONOUS[int(level)])


def _prune(conn: apsw.Connection, consumer: str, reader: str, before_ms: int) -> None:
    newest = conn.execute(
        "SELECT planned_ms FROM sq_planned_batches WHERE reader = ? "
        "ORDER BY planned_ms DESC LIMIT 1 OFFSET ?",
        (reader, PLANNED_BATCHES_KEPT - 1),
    ).fetchone()
    if newest is not None:  # more than the newest few: those past the hold go
        conn.execute(
            "DELETE FROM sq_planned_batches WHERE reader = ? AND planned_ms < ?",
            (reader, min(before_ms, newest[0])),
        )
    conn.execute(
        "DELETE FROM sq_planned_batches WHERE consumer = ? AND reader <> ? AND planned_ms < ? "
        "AND reader NOT IN (SELECT reader FROM sq_consumer_positions WHERE consumer = ?)",
        (consumer, reader, before_ms, consumer),
    )


def forget(conn: apsw.Connection, consumer: str, reader: str | None = None) -> None:
    """Delete the plans of the name's queries (one reader's, or all); caller holds the lock."""
    if reader is None:
        conn.execute("DELETE FROM sq_planned_batches WHERE consumer = ?", (consumer,))
    else:
        conn.execute("DELETE FROM sq_planned_batches WHERE consumer = ? AND reader = ?",
                     (consumer, reader))
