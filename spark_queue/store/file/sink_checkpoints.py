"""Which ledger entry a sink without ``sinkId`` writes under, per Spark checkpoint.

Such a sink is named by its streaming query's id, which Spark keeps in the checkpoint's
``metadata``. A power cut before the kernel's first writeback leaves every checkpoint file
empty, ``metadata`` included (docs/semantics.md, "After a power cut"): repaired, the query
comes back under a NEW id, and a ledger keyed by it alone would write again what the sink
had committed. So the store also records, at a sink's first commit, the entry it writes
under for its checkpoint's location (meta key ``sink_checkpoint/<location>``), and a
query whose checkpoint lost its id goes on under the recorded entry.

Who lost the id is said by the checkpoint, never guessed: ``sqliteq checkpoint repair``
leaves a mark in a checkpoint whose ``metadata`` it removed
(:data:`spark_queue.checkpoint_repair.TORN_METADATA_MARK`). A different id at the same
location without the mark is a new query (a checkpoint deleted and made anew there): it
gets a ledger entry of its own, and the record moves to it.

Upgrades: a sink whose ledger entry is under its query id from an earlier release records
that id at its next commit and goes on as before; a checkpoint whose ``metadata`` was torn
before its sink ever committed under this release has no record (``--query-id`` of the
repair gives the id back).
"""

from __future__ import annotations

import logging
import os

import apsw

from spark_queue.store.file import meta
from spark_queue.store.file.names import validate_name

log = logging.getLogger("spark_queue.store")


def normal_location(location: str) -> str:
    """One spelling per local checkpoint: ``file:`` URIs and relative paths as absolute
    paths; any other URI as given."""
    text = location
    if text.startswith("file://"):
        text = text[len("file://"):]
    elif text.startswith("file:"):
        text = text[len("file:"):]
    elif "://" in text:
        return text.rstrip("/")
    return os.path.abspath(text)


def sink_for_checkpoint(
    conn: apsw.Connection, location: str, query_id: str, *, id_lost: bool
) -> str:
    """The ledger entry the sink of query ``query_id``, checkpointed at ``location``, writes
    under (the caller holds the write lock): the one recorded for the location when the
    checkpoint lost its id (``id_lost``, the repair's mark), else ``query_id``, recorded."""
    validate_name(query_id, "sink")
    key = meta.sink_checkpoint_key(normal_location(location))
    recorded = meta.get(conn, key)
    if recorded == query_id:
        return query_id
    if recorded is not None and id_lost:
        log.warning("sqliteq sink: the checkpoint %s lost its query id to a power cut (now "
                    "%s); the sink goes on under its ledger entry %s", location, query_id,
                    recorded)
        return validate_name(recorded, "sink")
    meta.put(conn, key, query_id)
    return query_id
