"""Consumer offsets and retention."""

from __future__ import annotations

import pytest

from spark_queue.errors import OffsetRangeError, OptionError, StoreBusyError
from spark_queue.store import Store
from spark_queue.store.file.connection import now_ms


def test_offset_save_is_monotonic(store):
    store.publish_many("t", range(10))
    assert store.commit_offsets("c", {"t": 5}) == {"t": 5}
    assert store.commit_offsets("c", {"t": 3}) == {"t": 5}
    assert store.committed_offsets("c") == {"t": 5}
    assert store.commit_offsets("c", {"t": 3}, reset=True) == {"t": 3}
    assert store.commit_offsets("c", {"t": 10}) == {"t": 10}


def test_offset_save_beyond_latest_is_rejected(store):
    store.publish_many("t", range(3))
    with pytest.raises(
        OffsetRangeError, match="its latest offset is 3. must be an integer from 0 to 3; got 4"
    ):
        store.commit_offsets("c", {"t": 4})
    assert store.committed_offsets("c") == {}


def test_a_reset_chooses_its_offsets_where_no_prune_can_move_the_earliest(store):
    # A prune between reading the earliest offset and saving it would leave
    # the consumer below the earliest: readers would report lost data.
    store.publish_many("t", range(10))
    store.commit_offsets("c", {"t": 10})
    with Store(store.path, busy_timeout_ms=50) as pruner:

        def earliest(topic):
            with pytest.raises(StoreBusyError):
                pruner.topic(topic).prune(retention_rows=2, force=True)
            return store.topic(topic).bounds()[0]

        assert store.reset_offsets("c", ["t"], earliest) == {"t": 0}
    assert store.committed_offsets("c") == {"t": 0}


def test_a_reset_whose_target_fails_saves_nothing(store):
    store.publish_many("a", range(4))
    store.publish_many("b", range(4))
    store.commit_offsets("c", {"a": 4, "b": 4})

    def target(topic):
        if topic == "b":
            raise OffsetRangeError("no such offset")
        return 0

    with pytest.raises(OffsetRangeError):
        store.reset_offsets("c", ["a", "b"], target)
    assert store.committed_offsets("c") == {"a": 4, "b": 4}


def test_consumers_report_lag(store):
    store.publish_many("a", range(10))
    store.publish_many("b", range(4))
    store.commit_offsets("c1", {"a": 7, "b": 4})
    store.commit_offsets("c2", {"a": 2})
    lags = {(c.consumer, c.topic): c.lag for c in store.consumers()}
    assert lags == {("c1", "a"): 3, ("c2", "a"): 8, ("c1", "b"): 0}
    assert [c.consumer for c in store.consumers("b")] == ["c1"]


def test_retention_never_deletes_at_or_above_lowest_consumer_offset(store):
    store.publish_many("t", range(100))
    store.commit_offsets("slow", {"t": 20})
    store.commit_offsets("fast", {"t": 90})
    result = store.topic("t").prune(retention_rows=10)[0]
    assert (result.deleted, result.earliest_after, result.held_by) == (20, 20, "slow")
    assert store.topic("t").bounds() == (20, 100)
    forced = store.topic("t").prune(retention_rows=10, force=True)[0]
    assert (forced.deleted, forced.earliest_after) == (70, 90)
    assert [e.offset for e in store.read("t")][0] == 90


def test_retention_by_age_deletes_a_prefix_only(store):
    for ts in (1000, 2000, 3000, 2500, 4000):
        store.publish("t", ts, timestamp_ms=ts)
    # Offsets below the first event young enough go; the late 2500 stays
    # because deleting it would leave a hole.
    result = store.topic("t").prune(retention_ms=1000, at_ms=4000)[0]
    assert result.deleted == 2
    assert [e.value for e in store.read("t")] == [3000, 2500, 4000]
    assert store.check().ok


def test_stored_retention_applies_and_prune_reports_per_topic(store):
    store.publish_many("a", range(50))
    store.publish_many("b", range(5))
    store.topic("a").set_retention(retention_rows=10)
    results = {r.topic: r.deleted for r in store.housekeeping.prune()}
    assert results == {"a": 40, "b": 0}
    with pytest.raises(OptionError, match="must be an integer from 1"):
        store.topic("a").set_retention(retention_rows=0)


def test_retention_of_everything_keeps_latest_offset(store):
    store.publish_many("t", range(5))
    store.topic("t").prune(retention_ms=1, at_ms=now_ms() + 1000)
    assert store.topic("t").bounds() == (5, 5)
    assert store.publish("t", "next") == 5


def test_a_prune_limit_is_checked_as_the_setting_it_overrides(store):
    """prune(retention_rows=0) deleted every event while set_retention refused 0 (#53)."""
    store.publish_many("t", range(3))
    for call in (lambda: store.topic("t").set_retention(retention_rows=0),
                 lambda: store.topic("t").prune(retention_rows=0),
                 lambda: store.topic("t").prune(retention_ms=0)):
        with pytest.raises(OptionError, match=r"must be an integer from 1 to 2\*\*62 - 1"):
            call()
    assert store.topic("t").bounds() == (0, 3)


def test_the_old_retention_names_still_work_with_a_deprecation_warning(store):
    store.publish_many("t", list(range(10)))
    with pytest.warns(DeprecationWarning, match="use retention_rows"):
        store.topic("t").set_retention(max_rows=4)
    assert {t.name: t for t in store.topics()}["t"].retention_rows == 4
    with pytest.warns(DeprecationWarning, match="use retention_rows"):
        [result] = store.topic("t").prune(max_rows=6)
    assert result.earliest_after == 4
    with pytest.raises(TypeError, match="both 'retention_rows' and its deprecated name"):
        store.topic("t").prune(retention_rows=2, max_rows=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_bytes'"):
        store.topic("t").prune(max_bytes=2)
    assert store.topic("t").earliest_offset() == 4
