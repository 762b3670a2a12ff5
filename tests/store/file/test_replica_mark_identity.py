"""The replicated mark belongs to a topic, not to its reusable id (issue 58, point 8).

SQLite gives a topic created after a delete the highest id again: a mark keyed by that id
alone showed readers of the new topic events the replica never held. The replicator's
cycle is played by hand (ReplicaCycles), so every step is exact.
"""

from __future__ import annotations

import pytest

from spark_queue.errors import OffsetRangeError
from spark_queue.store import ReplicaCycles, Store, replica_status
from spark_queue.store.file import meta


@pytest.fixture
def marked(tmp_path):
    """A store marked replicated, and its replicator's cycles to play by hand."""
    path = tmp_path / "s.sqlite"
    cycles = ReplicaCycles(path)
    cycles.mark("file:///replica")
    with Store(path) as store:
        yield store, cycles
    cycles.close()


def _cycle(cycles: ReplicaCycles) -> None:
    cycles.finish(*cycles.begin())


def _topic_id(store: Store, name: str) -> int:
    return int(store.conn.execute(
        "SELECT id FROM sq_topics WHERE name = ?", (name,)).fetchall()[0][0])


def _readers_see(store: Store, topic: str) -> int:
    """How many events of ``topic`` each reader is shown: they must all agree."""
    seen = {
        "bounds": store.topic(topic).bounds()[1],
        "topics": next(t.latest for t in store.topics() if t.name == topic),
        "read": len(store.read(topic, 0, limit=10_000)),
    }
    assert len(set(seen.values())) == 1, seen
    return seen["read"]


def test_a_recreated_topic_starts_with_no_mark(marked):
    store, cycles = marked
    store.publish_many("orders", range(500))
    _cycle(cycles)
    assert _readers_see(store, "orders") == 500
    old_id = _topic_id(store, "orders")
    store.topic("orders").delete()
    store.publish_many("orders", range(500))
    assert _topic_id(store, "orders") == old_id  # SQLite gave the id again
    assert _readers_see(store, "orders") == 0  # the replica holds none of them
    with pytest.raises(OffsetRangeError):
        store.commit_offsets("c", {"orders": 1})
    status = replica_status(store.path)
    assert status is not None and status.behind == {"orders": 500}
    _cycle(cycles)  # now the replica holds them
    assert _readers_see(store, "orders") == 500


def test_a_topic_recreated_between_a_cycles_two_steps_gets_no_end_from_it(marked):
    store, cycles = marked
    store.publish_many("orders", range(500))
    number, ends = cycles.begin()  # the snapshot sees the old topic's 500
    store.topic("orders").delete()
    store.publish_many("orders", range(600))
    cycles.finish(number, ends)  # the replica holds the old topic's commit only
    assert _readers_see(store, "orders") == 0
    _cycle(cycles)
    assert _readers_see(store, "orders") == 600


def test_a_mark_an_older_release_wrote_stays_readable_but_not_for_a_reused_id(marked):
    """A file of the previous release (restored, say): its mark has no ``replica_mark_born``
    and its deletes left their entries behind. Entries of topics older than its last sync
    still count; a topic created since, under a deleted topic's id, starts with none."""
    store, cycles = marked
    store.publish_many("kept", range(200))
    store.publish_many("orders", range(500))
    _cycle(cycles)
    old_id = _topic_id(store, "orders")
    synced = store.conn.execute(
        "SELECT max(created_ms) FROM sq_topics").fetchall()[0][0]
    with store.write() as conn:
        # What the previous release left: the mark as it wrote it, the sync's time, and
        # a delete that kept the topic's entry.
        meta.drop(conn, meta.REPLICA_MARK_BORN)
        meta.put(conn, meta.REPLICA_MARK, f'{{"{_topic_id(store, "kept")}": 200, '
                                          f'"{old_id}": 500}}')
        meta.put(conn, meta.REPLICA_SYNCED_MS, str(synced))
        conn.execute("DELETE FROM sq_events WHERE topic_id = ?", (old_id,))
        conn.execute("DELETE FROM sq_topics WHERE id = ?", (old_id,))
    assert _readers_see(store, "kept") == 200  # the old mark reads as it did
    with store.write() as conn:  # a new topic, created after that sync
        conn.execute("INSERT INTO sq_topics (name, created_ms) VALUES ('orders', ?)",
                     (synced + 1,))
    store.publish_many("orders", range(500))
    assert _topic_id(store, "orders") == old_id
    assert _readers_see(store, "orders") == 0
    assert store.check().ok
    _cycle(cycles)
    assert _readers_see(store, "orders") == 500
    assert _readers_see(store, "kept") == 200


def test_a_topic_born_ahead_of_the_clock_is_covered_by_the_next_cycle(marked):
    """The mark knows its topics by their ``created_ms``, compared for equality, never
    against the clock: a machine whose clock stepped back (a board booting with a stale
    clock) does not hide topics created before the step."""
    store, cycles = marked
    ahead = 1000 * 86400 * 365 * 80  # ms: about 2050, past this machine's clock
    with store.write() as conn:
        conn.execute("INSERT INTO sq_topics (name, created_ms) VALUES ('orders', ?)", (ahead,))
    store.publish_many("orders", range(300))
    assert _readers_see(store, "orders") == 0
    _cycle(cycles)
    assert _readers_see(store, "orders") == 300
