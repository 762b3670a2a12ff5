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

A query is named by its ``reader`` id (the ``@reader`` its offsets carry, with or without
a ``consumer``). The record stays small: a query keeps its plans of the last
``PLANNED_BATCH_HOLD_MS`` (longer than the OS keeps writes unflushed) and its newest
``PLANNED_BATCHES_KEPT`` whatever their age. Under a consumer name, a query the name no
longer has a position for loses its plans once they are that old, and deleting the
consumer (or the reader) deletes them. A query without a consumer (recorded under
``consumer = ''``, which no name can be) is named by nothing else in the store, so an age
decides: once its newest plan is ``UNNAMED_PLANS_HOLD_MS`` old, the next plan any query
records deletes its plans (a query stopped that long and then replayed loses only the
exactness of a batch torn before it stopped).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import apsw

from spark_queue.defaults import (
    PLANNED_BATCH_HOLD_MS,
    PLANNED_BATCHES_KEPT,
    UNNAMED_PLANS_HOLD_MS,
)
from spark_queue.store.file.connection import HasStoreConnection, now_ms
from spark_queue.store.file.names import validate_name

#: The ``consumer`` of the plans of a query reading under no consumer name (no name is empty).
UNNAMED = ""



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
    store: HasStoreConnection, consumer: str | None, reader: str, start: Mapping[str, int],
    end: Mapping[str, int],
) -> None:
    """Record that ``reader`` (a query under ``consumer``, or under no name) planned
    ``[start, end)``, replacing an earlier end for that start, in one transaction fsynced
    before it returns (call it outside any transaction); forget the query's plans past their
    hold, those of the name's queries that are gone, and those of unnamed queries idle
    past ``UNNAMED_PLANS_HOLD_MS``."""
    if consumer is not None:
        validate_name(consumer, "consumer")
    validate_name(reader, "reader")
    # A plan must survive what the sink's ledger survives: the commit syncs the WAL.
    with store.file.synced_write() as tx:
        now = now_ms()
        tx.execute(
            "INSERT INTO sq_planned_batches (reader, start_offsets, consumer, end_offsets, "
            "planned_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT (reader, start_offsets) DO "
            "UPDATE SET end_offsets = excluded.end_offsets, "
            "planned_ms = excluded.planned_ms",
            (reader, _key(start), consumer or UNNAMED, _key(end), now),
        )
        _prune(tx, consumer, reader, now - PLANNED_BATCH_HOLD_MS)
        _prune_unnamed(tx, reader, now - UNNAMED_PLANS_HOLD_MS)


def _prune(conn: apsw.Connection, consumer: str | None, reader: str, before_ms: int) -> None:
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
    if consumer is None:
        return  # no positions name unnamed queries: _prune_unnamed's age rule bounds them
    conn.execute(
        "DELETE FROM sq_planned_batches WHERE consumer = ? AND reader <> ? AND planned_ms < ? "
        "AND reader NOT IN (SELECT reader FROM sq_consumer_positions WHERE consumer = ?)",
        (consumer, reader, before_ms, consumer),
    )


# The unnamed queries whose newest plan is older than the cutoff. Hops from reader to
# reader through the (consumer, reader) index and reads each one's newest plan through
# (reader, planned_ms): a few index probes per unnamed query, never a scan of their plans
# (a query's last minutes of plans may be thousands of rows).
_IDLE_UNNAMED = (
    "WITH RECURSIVE unnamed(reader) AS ("
    " SELECT min(reader) FROM sq_planned_batches WHERE consumer = ?1"
    " UNION ALL SELECT (SELECT min(reader) FROM sq_planned_batches"
    "  WHERE consumer = ?1 AND reader > unnamed.reader) FROM unnamed"
    " WHERE unnamed.reader IS NOT NULL)"
    " SELECT reader FROM unnamed WHERE reader IS NOT NULL AND reader <> ?2"
    " AND (SELECT max(planned_ms) FROM sq_planned_batches p"
    "  WHERE p.reader = unnamed.reader) < ?3"
)


def _prune_unnamed(conn: apsw.Connection, reader: str, before_ms: int) -> None:
    idle = [row[0] for row in conn.execute(_IDLE_UNNAMED, (UNNAMED, reader, before_ms))]
    for gone in idle:
        conn.execute("DELETE FROM sq_planned_batches WHERE reader = ? AND consumer = ?",
                     (gone, UNNAMED))


def forget(conn: apsw.Connection, consumer: str, reader: str | None = None) -> None:
    """Delete the plans of the name's queries (one reader's, or all); caller holds the lock."""
    if reader is None:
        conn.execute("DELETE FROM sq_planned_batches WHERE consumer = ?", (consumer,))
    else:
        conn.execute("DELETE FROM sq_planned_batches WHERE consumer = ? AND reader = ?",
                     (consumer, reader))
