"""What tells one stored event from another at the same offset: its fingerprint.

Offsets are dense and immutable in ONE history of a store, but a store can be put
back to an older copy (``sqliteq backup`` restored, a replica restored to an earlier
time) and then grow again: the same offset then names another event. A reader that
remembers the fingerprint of the last event it read (the Spark source keeps it in
its checkpoint's offsets) can tell whether the store still holds that event.

A fingerprint is ``(offset, ts_ms, digest)``: the digest is 16 hex digits of
BLAKE2b over the event's stored columns exactly as the file holds them (value type,
key, value, headers; each with its storage class), so it never depends on how a
release decodes payloads. Two events with the same offset, time, key, value and
headers are the same event as far as any reader can tell.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping
from typing import NamedTuple

import apsw

from spark_queue.store.file.connection import HasStoreConnection
from spark_queue.store.streams.topic_reads import find_id


class Fingerprint(NamedTuple):
    """One stored event's ``offset``, ``ts_ms`` and content ``digest`` (16 hex digits)."""

    offset: int
    ts_ms: int
    digest: str


def _column(hasher: hashlib.blake2b, value: object) -> None:
    # A tag and a length before each column, so no two different rows hash alike by
    # shifting bytes between columns.
    if value is None:
        hasher.update(b"n")
        return
    if isinstance(value, bytes):
        tag, data = b"b", value
    elif isinstance(value, str):
        tag, data = b"s", value.encode("utf-8", "surrogatepass")
    else:  # an INTEGER or REAL a foreign writer stored: hashed as its text
        tag, data = b"r", repr(value).encode()
    hasher.update(tag + struct.pack("<Q", len(data)))
    hasher.update(data)


def digest_of(value_type: int, key: object, value: object, headers: object) -> str:
    """The content digest of an event's stored columns."""
    hasher = hashlib.blake2b(digest_size=8)
    hasher.update(struct.pack("<q", value_type))
    for column in (key, value, headers):
        _column(hasher, column)
    return hasher.hexdigest()


def fingerprints_in(conn: apsw.Connection, positions: Mapping[str, int]) -> dict[str, Fingerprint]:
    """The fingerprint of the event at ``positions[topic]`` for each topic that holds one
    (a topic missing, or an offset retention removed or not yet written, is left out).
    Caller holds one snapshot."""
    found = {}
    for topic in sorted(positions):
        tid = find_id(conn, topic)
        if tid is None:
            continue
        row = conn.execute(
            "SELECT offset, ts_ms, value_type, key, value, headers FROM sq_events "
            "WHERE topic_id = ? AND offset = ?",
            (tid, positions[topic]),
        ).fetchone()
        if row is not None:
            offset, ts_ms, value_type, key, value, headers = row
            found[topic] = Fingerprint(offset, ts_ms, digest_of(value_type, key, value, headers))
    return found


def event_fingerprints(
    store: HasStoreConnection, positions: Mapping[str, int]
) -> dict[str, Fingerprint]:
    """``{topic: Fingerprint}`` of the event at each ``{topic: offset}`` the store holds, from
    one snapshot (read-only; nested in the caller's ``Store.snapshot()`` if it holds one)."""
    with store.file.read() as conn:
        return fingerprints_in(conn, positions)
