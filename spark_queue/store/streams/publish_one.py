"""``Store.publish``: one event in its own transaction, at the raw transaction's pace.

A one-event transaction needs five statements: BEGIN IMMEDIATE, the topic's
next offset, the INSERT, the UPDATE of ``next_offset``, COMMIT. Everything
else the batch paths do per call is paid here once per topic and connection:
the topic's row (id, next offset, payload limit, unmarked tail, and the probe
for rows another client left above ``next_offset``), read by
:func:`~spark_queue.store.streams.event_log.open_log`, is kept from the last
publish and trusted for as long as the file is unchanged since that publish
committed. SQLite's data version of the file (``Connection.data_version``: a
file control, no statement) moves with every commit by any connection, this
one included, and a transaction reads it after BEGIN IMMEDIATE, once it sees
the file as the commit will: any other write since, ours or another
client's, and the row is read again. The event itself goes in through
:func:`~spark_queue.store.streams.event_log.write_events`, like every other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import apsw

from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.codec import encode_headers, encode_key, encode_value
from spark_queue.store.file.connection import StoreConnection, now_ms
from spark_queue.store.streams.event_log import TopicLog, open_log, write_events
from spark_queue.store.streams.topic_schemas import Quarantined


class OnePublisher:
    """Publishes one event per transaction on one store connection (see the module)."""

    __slots__ = ("file", "_logs", "_version")

    def __init__(self, file: StoreConnection) -> None:
        self.file = file
        self._logs: dict[str, TopicLog] = {}  # by topic name, as of ``_version``
        self._version = -1  # the file's data version after our last commit; -1: none yet

    def publish(
        self, topic: str, value: Any, key: str | bytes | None,
        headers: Mapping[str, str] | None, timestamp_ms: int | None,
    ) -> int | Quarantined:
        """Store one event in its own transaction; return its offset (see ``Store.publish``)."""
        stored, value_type = encode_value(value)
        keys = None if key is None else (encode_key(key),)
        stored_headers = None if headers is None else encode_headers(headers)
        ts_ms = now_ms() if timestamp_ms is None else check_int(timestamp_ms, "timestamp_ms")
        try:
            offset: int | Quarantined = self.file.transact(
                self._write, topic, (stored,), value_type, ts_ms, keys,
                None if stored_headers is None else (stored_headers,), True, value,
            )
        except BaseException:
            # Rolled back: what the transaction did to a kept log never happened.
            self._logs.clear()
            raise
        self._version = self.file.conn.data_version()
        return offset

    def _write(
        self, conn: apsw.Connection, topic: str, values: Sequence[Any], value_type: int,
        ts_ms: int, keys: Sequence[str | bytes | None] | None, headers: Sequence[str] | None,
        own: bool = False, original: Any = None,
    ) -> int | Quarantined:
        version = conn.data_version()
        if version != self._version:
            self._logs.clear()
            # Kept until the file changes: our commit (publish() then keeps the version
            # after it), another connection's, or the end of the caller's transaction.
            self._version = version
        log = self._logs.get(topic) if type(topic) is str else None
        if log is None:
            log = self._logs[topic] = open_log(conn, topic)
        # In publish()'s own transaction (``own``) the kept row is the table's: the file's
        # data version, read under the write lock, is the one after our last commit, so
        # nothing has written since. Inside a caller's transaction it proves nothing (the
        # caller's own writes do not move it), and write_events reads the table.
        # A dict as given: the schema's check may read it rather than parse its text.
        end = write_events(conn, log, values, value_type, ts_ms, keys, headers, current=own,
                           originals=(original,) if type(original) is dict else None)
        if log.schema is not None and log.schema.quarantined:  # on_invalid="quarantine"
            return log.schema.quarantined.pop()
        return end - 1

    # -- inside a transaction the caller holds (spark_queue/store/floor/transaction.py) --------
    def publish_in(
        self, conn: apsw.Connection, topic: str, value: Any, key: str | bytes | None,
        headers: Mapping[str, str] | None, timestamp_ms: int | None,
    ) -> int | Quarantined:
        """:meth:`publish` inside the caller's open write transaction; its offset.

        The topic's row is kept between the calls of one transaction, and never trusted
        for the offset: the caller's savepoints and SQL (``INSERT INTO sq_publish``, a
        trigger) may move the topic between calls, so :func:`write_events` takes the
        offset from the table and reads the row again when it moved. The transaction's
        end drops what was kept (:meth:`forget`).
        """
        stored, value_type = encode_value(value)
        keys = None if key is None else (encode_key(key),)
        encoded = None if headers is None else encode_headers(headers)
        stored_headers = None if encoded is None else (encoded,)
        ts_ms = now_ms() if timestamp_ms is None else check_int(timestamp_ms, "timestamp_ms")
        return self._write(conn, topic, (stored,), value_type, ts_ms, keys, stored_headers,
                           False, value)

    def forget(self) -> None:
        """Drop every kept row: a transaction the caller held ended (committed or rolled
        back) and may have moved the topics; the next :meth:`publish` reads them again."""
        self._logs.clear()
        self._version = -1
