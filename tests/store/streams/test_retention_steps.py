"""A prune deletes any backlog in steps of at most STEP_ROWS events, each its own write
transaction, never above the lowest saved consumer offset unless forced."""

from __future__ import annotations

from spark_queue.store.file.steps import STEP_ROWS
from spark_queue.store.streams import retention


def earliest_at_each_step(store, **limits):
    """Run the stepped prune of topic t, noting the earliest offset inside each step's
    transaction (before its delete): the rows each transaction deleted are the gaps."""
    seen = []

    def may_step(conn):
        seen.append(conn.execute(
            "SELECT min(offset) FROM sq_events WHERE topic_id = (SELECT id FROM sq_topics "
            "WHERE name = 't')").fetchall()[0][0])
        return True

    with store.snapshot():
        ids = [(tid, name) for tid, name in retention.topic_ids(store.conn) if name == "t"]
    results = retention.prune_topics(store.file, ids, may_step=may_step, **limits)
    return results, seen


def counting_commits(store):
    commits = []

    def hook():
        commits.append(1)
        return False  # let it commit

    store.conn.set_commit_hook(hook)
    return commits


def test_a_prune_deletes_a_backlog_in_transactions_of_at_most_step_rows(store):
    store.publish_many("t", range(2 * STEP_ROWS + STEP_ROWS // 2 + 1000))
    [result], seen = earliest_at_each_step(store, retention_rows=1000, force=True)
    assert result.deleted == 2 * STEP_ROWS + STEP_ROWS // 2
    assert seen == [0, STEP_ROWS, 2 * STEP_ROWS]  # three transactions
    kept_from = 2 * STEP_ROWS + STEP_ROWS // 2
    assert store.topic("t").bounds() == (kept_from, kept_from + 1000)


def test_store_prune_commits_once_per_step(store):
    store.publish_many("t", range(3 * STEP_ROWS + 10))
    commits = counting_commits(store)
    [result] = store.topic("t").prune(retention_rows=10, force=True)
    store.conn.set_commit_hook(None)
    assert result.deleted == 3 * STEP_ROWS
    # One per step: 3 full; the last knows nothing is left, so no empty fourth.
    assert len(commits) == 3


def test_no_step_deletes_at_or_above_the_lowest_saved_offset(store):
    store.publish_many("t", range(2 * STEP_ROWS + 500))
    store.commit_offsets("slow", {"t": STEP_ROWS + 300})
    [result], seen = earliest_at_each_step(store, retention_rows=10)
    assert (result.deleted, result.held_by) == (STEP_ROWS + 300, "slow")
    assert seen == [0, STEP_ROWS]
    assert store.topic("t").bounds()[0] == STEP_ROWS + 300


def test_a_topic_with_nothing_to_delete_costs_no_write_transaction(store):
    store.publish_many("t", range(100))
    commits = counting_commits(store)
    assert store.housekeeping.prune(retention_rows=1000)[0].deleted == 0
    store.conn.set_commit_hook(None)
    assert commits == []


MB = 2**20
# docs/operations.md: a step deletes at most 10,000 rows and at most 8 MiB of payloads.
STEP_MIB = 8


def test_a_step_of_large_events_deletes_at_most_step_bytes(store):
    """A row bound alone let one step of 1 MB events hold the write lock for seconds
    (10,000 of them: ~35 s); the byte bound keeps each step to a few milliseconds' work."""
    store.publish_many("t", [b"x" * MB] * 40)
    [result], seen = earliest_at_each_step(store, retention_rows=1, force=True)
    assert result.deleted == 39
    per_step = [b - a for a, b in zip(seen, [*seen[1:], 39], strict=True)]
    assert sum(per_step) == 39 and max(per_step) <= STEP_MIB, per_step
    assert store.topic("t").bounds() == (39, 40)
