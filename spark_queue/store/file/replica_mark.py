"""The replicated high-water mark: what a replica is known to hold, kept in the store.

Litestream ships the WAL; it cannot know which events a reader may see or when a
write is safe to acknowledge. The replicator (``sqliteq replicate``,
:mod:`spark_queue.replication.replicator`) runs cycles, each in three steps:

1. :func:`begin_cycle`, one write transaction: bump the cycle counter (meta key
   ``replica_cycle_begun``) and snapshot every topic's ``next_offset``;
2. Litestream's ``sync -wait``: the replica now holds every commit up to step 1's;
3. :func:`finish_cycle`, one write transaction: the snapshot becomes the mark
   (``replica_mark``), the cycle is done (``replica_cycle_done``).

Readers of a replicated store (one with the meta key ``replica_url``) see each topic up to
its mark only (:func:`readable_end`: the Spark source, ``tail``, ``Store.read``,
saved consumer offsets), so a restore never takes back an event a reader saw, and an
offset never names two events. A ``durability="replicated"`` writer waits after its
commit for a cycle that began after it (:class:`ReplicaWait`). A restored store keeps
the mark of its last finished cycle, which the replica held before it was written: at
most what the restore brought back.

The mark belongs to a topic, not to its id: SQLite gives a topic created after a delete
the highest id again, so a recreated topic could inherit the deleted one's mark and show
readers events the replica never held. Three rules keep a mark with its topic (the mark's
JSON, ``{"topic id": end}``, is unchanged, so files of every release read alike):

- deleting a topic drops its entry in the delete's transaction (:func:`forget_topic_mark`);
- :func:`finish_cycle` writes an entry only for a topic that is still the one the cycle's
  snapshot saw (same ``created_ms``, its end not behind the snapshot's), so a delete and
  create between the cycle's two transactions cannot pass the old end on;
- beside the mark, meta ``replica_mark_born`` holds each entry's topic's ``created_ms``,
  and a reader takes an entry only for the topic born then: a topic created since under a
  reused id starts with no mark. A file an older release wrote has no such key, and its
  deletes left their entries behind: there an entry counts only for a topic created no
  later than the last sync (``replica_synced_ms``), until the next cycle writes both keys
  (tests/store/file/test_replica_mark_identity.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import NamedTuple

import apsw

from spark_queue import defaults
from spark_queue.errors import ReplicationTimeoutError
from spark_queue.store.file import meta, replicator_lease
from spark_queue.store.file.connection import Row, StoreConnection, now_ms

URL_KEY = meta.REPLICA_URL
_BEGUN_KEY = meta.REPLICA_CYCLE_BEGUN
_DONE_KEY = meta.REPLICA_CYCLE_DONE
_MARK_KEY = meta.REPLICA_MARK
_SYNCED_KEY = meta.REPLICA_SYNCED_MS
_BORN_KEY = meta.REPLICA_MARK_BORN

# A waiting writer looks at the done counter after 1 ms, then twice as long, at most
# every 20 ms: one cycle is a few tens of milliseconds on a local disk.
_WAIT_STEP_MIN_S = 0.001
_WAIT_STEP_MAX_S = 0.02


class ReplicaStatus(NamedTuple):
    """What a replicated store records about its replica (``None`` fields: not yet)."""

    url: str
    cycle_done: int
    synced_ms: int | None
    #: per topic name: events published but not yet confirmed in the replica
    behind: dict[str, int]
    #: when the oldest of those events was published (None: none waits), so the lag of a
    #: replica that never synced counts from the first event that waits for it
    waiting_since_ms: int | None = None


def wake_path(store_path: str) -> str:
    """The file a waiting writer touches so the replicator runs a cycle at once."""
    return f"{store_path}-replica-wake"


def owns_wal(conn: apsw.Connection) -> bool:
    """Whether Litestream owns the WAL's checkpoints: the store is replicated.

    Seen on Litestream 0.5.17: a checkpoint by the application (a PASSIVE one, as
    housekeeping and SQLite's autocheckpoint run) racing Litestream's sync yields a
    replica whose restore fails ``PRAGMA integrity_check``. So on a replicated store the
    store's connections never checkpoint (``wal_autocheckpoint=0``, set at open by
    :func:`spark_queue.store.file.connection.open_connection`; housekeeping skips its
    checkpoint) and Litestream's own checkpoints bound the WAL. A file that is not a
    store yet (no meta table) is not replicated.
    """
    return meta.has(conn, URL_KEY)


def replica_url(conn: apsw.Connection) -> str | None:
    """The replica a store is marked as replicated to, or None (caller holds a snapshot)."""
    return meta.get(conn, URL_KEY)


def mark_replicated(conn: apsw.Connection, url: str) -> None:
    """Mark the store replicated to ``url`` (in the caller's write transaction). Readers
    are capped from here on; a store marked for the first time starts with an empty
    mark, so they see nothing new until the first cycle finishes."""
    if meta.get(conn, _MARK_KEY) is None:
        put_mark(conn, _next_offsets(conn), _created(conn))
    meta.put(conn, URL_KEY, url)


def unmark(conn: apsw.Connection) -> bool:
    """Forget the replica (caller's write transaction): readers see every event again,
    replicated writes fail. True if the store was marked."""
    was = meta.get(conn, URL_KEY) is not None
    meta.drop(conn, *meta.REPLICA_KEYS)
    return was


def read_mark(conn: apsw.Connection) -> dict[int, int] | None:
    """Each topic id's readable end, or None when the store is not replicated.

    Only entries of the topics they were written for count (the module's third rule): an
    entry left by a deleted topic whose id was given again is not read.
    """
    if meta.get(conn, URL_KEY) is None:
        return None
    entries = _stored_mark(conn)
    if not entries:
        return {}
    created = _created(conn)
    if meta.get(conn, _BORN_KEY) is not None:
        born = _stored_mark(conn, _BORN_KEY)
        return {tid: end for tid, end in entries.items()
                if tid in created and created[tid] == born.get(tid)}
    synced = meta.get(conn, _SYNCED_KEY)  # a mark an older release wrote
    return {tid: end for tid, end in entries.items()
            if tid in created and (synced is None or created[tid] <= int(synced))}


def _stored_mark(conn: apsw.Connection, key: str = _MARK_KEY) -> dict[int, int]:
    text = meta.get(conn, key)
    return {} if text is None else {int(k): int(v) for k, v in json.loads(text).items()}


def _created(conn: apsw.Connection) -> dict[int, int]:
    return {int(tid): int(ms) for tid, ms in conn.execute("SELECT id, created_ms FROM sq_topics")}


def put_mark(conn: apsw.Connection, ends: dict[int, int], born: dict[int, int]) -> None:
    """Make ``ends`` (topic id: end) the mark, for the topics with those ids born at
    ``born`` (topic id: ``created_ms``), in the caller's write transaction. Every write of
    the mark goes through here: it covers those topics only (:func:`read_mark`)."""
    meta.put(conn, _MARK_KEY, json.dumps(ends))
    meta.put(conn, _BORN_KEY, json.dumps({tid: born[tid] for tid in ends if tid in born}))


def forget_topic_mark(conn: apsw.Connection, tid: int) -> None:
    """Drop topic ``tid``'s entry from the mark (the topic's delete, caller's write
    transaction): a topic created later under the same id starts with no mark."""
    entries = _stored_mark(conn) if meta.get(conn, URL_KEY) is not None else {}
    if tid in entries:
        del entries[tid]
        meta.put(conn, _MARK_KEY, json.dumps(entries))


def readable_bounds(conn: apsw.Connection, tid: int) -> tuple[int, int]:
    """``(first, end)`` of topic ``tid`` as a reader may see it: its first stored offset,
    and its next offset capped at the mark when the store is replicated (never below
    ``first``: retention may have passed it). The rule is SQL, once, for every client:
    the view ``sq_topic_ends`` (spark_queue/store/file/offset_views.py)."""
    row = conn.execute(_ENDS, (tid,)).fetchone()
    if row is None:
        return 0, 0
    return int(row[0]), int(row[1])


_ENDS = "SELECT first_offset, readable_end FROM sq_topic_ends WHERE topic_id = ?"


def _next_offsets(conn: apsw.Connection) -> dict[int, int]:
    rows = conn.execute("SELECT id, next_offset FROM sq_topics")
    return {int(tid): int(nxt) for tid, nxt in rows}


class CycleTopics(NamedTuple):
    """Who the topics in a cycle's snapshot were: each id's ``created_ms``."""

    created: dict[int, int]


def begin_cycle(conn: apsw.Connection) -> tuple[int, dict[int, int]]:
    """Step 1 (caller's write transaction): the new cycle's number and each topic's end."""
    cycle = int(meta.get(conn, _BEGUN_KEY) or 0) + 1
    meta.put(conn, _BEGUN_KEY, str(cycle))
    return cycle, _next_offsets(conn)


def cycle_topics(conn: apsw.Connection) -> CycleTopics:
    """Step 1's topics (in its transaction), for :func:`finish_cycle` to recognise them."""
    return CycleTopics(_created(conn))


def finish_cycle(
    conn: apsw.Connection, cycle: int, ends: dict[int, int], topics: CycleTopics | None = None
) -> None:
    """Step 3 (caller's write transaction): the replica holds ``ends``; cycle done.

    With step 1's ``topics``, an end is kept only for a topic that is still the one step 1
    saw: one deleted and created again in between starts with no mark (its events came
    after step 1's commit, so the replica need not hold them).
    """
    if topics is None:
        put_mark(conn, ends, _created(conn))
    else:
        put_mark(conn, _same_topics(conn, ends, topics.created), topics.created)
    meta.put(conn, _DONE_KEY, str(cycle))
    meta.put(conn, _SYNCED_KEY, str(now_ms()))


def _same_topics(conn: apsw.Connection, ends: dict[int, int], created: dict[int, int]
                 ) -> dict[int, int]:
    now_created, now_ends = _created(conn), _next_offsets(conn)
    # A topic's end never moves back; a recreated one's starts again from 0.
    return {
        tid: end for tid, end in ends.items()
        if tid in now_created and now_created[tid] == created.get(tid)
        and now_ends[tid] >= end
    }


def read_replica_status(conn: apsw.Connection) -> ReplicaStatus | None:
    """The replica's status (caller holds a snapshot), or None when not replicated."""
    url = meta.get(conn, URL_KEY)
    if url is None:
        return None
    behind: dict[str, int] = {}
    waiting_since: list[int] = []
    # What waits for the replica is what readers may not see yet: past the one rule's end.
    ends: list[Row] = conn.execute(
        "SELECT topic_id, topic, next_offset, readable_end FROM sq_topic_ends ORDER BY topic"
    ).fetchall()
    for tid, name, nxt, start in ends:
        behind[str(name)] = max(0, int(nxt) - int(start))
        if behind[str(name)]:
            waiting_since.extend(int(ts) for (ts,) in conn.execute(
                "SELECT ts_ms FROM sq_events WHERE topic_id = ? AND offset >= ? "
                "ORDER BY offset LIMIT 1", (tid, start)))
    synced = meta.get(conn, _SYNCED_KEY)
    return ReplicaStatus(
        url, int(meta.get(conn, _DONE_KEY) or 0), None if synced is None else int(synced),
        behind, min(waiting_since) if waiting_since else None,
    )


def mark_problems(conn: apsw.Connection) -> list[str]:
    """What ``sqliteq check`` finds wrong with a replicated store's mark (caller's snapshot):
    a mark that is not a JSON object of offsets, or one above a topic's next offset
    (readers would be told of events the store does not hold). Litestream's own tables
    (``_litestream_seq``, ``_litestream_lock``) are expected in a replicated store."""
    if meta.get(conn, URL_KEY) is None:
        return []
    try:
        mark = read_mark(conn) or {}
    except (ValueError, TypeError, AttributeError) as exc:
        return [f"{meta.TABLE} {_MARK_KEY!r} is not a JSON object of offsets ({exc}); "
                "restart `sqliteq replicate`, whose first cycle rewrites it."]
    ends = _next_offsets(conn)
    return [
        f"replicated mark of topic id {tid} is {end}, above its next offset {ends[tid]}: "
        "readers would be shown events the store does not hold; restart `sqliteq replicate`."
        for tid, end in sorted(mark.items()) if tid in ends and end > ends[tid]
    ]


class ReplicaWait:
    """After a commit: wait until a replicator cycle that began after it has finished,
    i.e. the replica holds the commit (``durability="replicated"``). The commit stands
    whatever happens; a wait that runs out raises ReplicationTimeoutError."""

    def __init__(self, file: StoreConnection, timeout_ms: int | None = None):
        self.file = file
        self.timeout_ms = defaults.REPLICATED_WAIT_MS if timeout_ms is None else timeout_ms
        self.wake = wake_path(file.path)

    def __call__(self) -> None:
        conn = self.file.conn
        # Read after the commit: cycle `begun` may have started before it, `begun + 1`
        # cannot have (tests/store/file/test_replica_mark.py).
        begun = int(meta.get(conn, _BEGUN_KEY) or 0)
        self._touch()
        step = _WAIT_STEP_MIN_S
        end = time.monotonic() + self.timeout_ms / 1000
        while int(meta.get(conn, _DONE_KEY) or 0) <= begun:
            left = end - time.monotonic()
            if left <= 0:
                raise ReplicationTimeoutError(
                    f"store {self.file.path!r} (durability='replicated'): the write is "
                    f"committed locally, but no replicator confirmed that the replica holds "
                    f"it within {self.timeout_ms} ms. Run `sqliteq replicate "
                    f"{self.file.path} --to URL` beside this process, or open the store "
                    "with another durability." + replicator_lease.gave_up_note(conn)
                )
            time.sleep(min(step, left))
            step = min(step * 2, _WAIT_STEP_MAX_S)

    def _touch(self) -> None:
        with contextlib.suppress(OSError):
            fd = os.open(self.wake, os.O_CREAT | os.O_WRONLY, 0o600)
            try:
                os.utime(fd)
            finally:
                os.close(fd)
