"""Creating, configuring and deleting topics: one transaction each, nothing half-done."""

from __future__ import annotations

import pytest

from spark_queue.errors import (
    OptionError,
    SparkQueueError,
    TopicExistsError,
    UnknownTopicError,
)
from spark_queue.store import Store, TopicRows


def test_a_topic_is_created_together_with_its_settings(store):
    info = store.topic("t").configure(exist_ok=False, retention_ms=3_600_000, retention_rows=10)
    assert (info.name, info.retention_ms, info.retention_rows, info.max_payload_bytes) == (
        "t", 3_600_000, 10, None)
    with pytest.raises(TopicExistsError, match="topic 't' already exists; change its settings"):
        store.topic("t").configure(exist_ok=False, retention_rows=5)
    assert store.topics()[0].retention_rows == 10


def test_configuring_one_setting_keeps_the_others_and_none_clears(store):
    store.topic("t").configure(retention_ms=1000, retention_rows=10, max_payload_bytes=64)
    store.topic("t").configure(retention_rows=None)
    info = store.topic("t").configure(max_payload_bytes=128)
    assert (info.retention_ms, info.retention_rows, info.max_payload_bytes) == (1000, None, 128)


@pytest.mark.parametrize(
    "settings", [{"retention_ms": 0}, {"retention_rows": -1}, {"max_payload_bytes": 0},
                 {"retention": 5}],
)
def test_a_bad_setting_creates_nothing(store, settings):
    with pytest.raises(SparkQueueError):
        store.topic("t").configure(**settings)
    assert not store.topic("t").exists()


def test_stored_retention_is_what_prune_applies(store):
    store.publish_many("t", range(10))
    store.topic("t").configure(retention_rows=3)
    [result] = store.topic("t").prune()
    assert (result.deleted, store.topic("t").bounds()) == (7, (7, 10))


def test_deleting_a_topic_removes_its_events_and_consumers_but_not_other_topics(store):
    store.publish_many("t", range(5))
    store.publish_many("other", range(2))
    store.commit_offsets("a", {"t": 2, "other": 1})
    store.commit_offsets("b", {"t": 5})
    deleted = store.topic("t").delete()
    assert (deleted.events, deleted.consumers) == (5, ["a", "b"])
    assert [t.name for t in store.topics()] == ["other"]
    assert store.committed_offsets("a") == {"other": 1}
    assert store.committed_offsets("b") == {}
    with pytest.raises(UnknownTopicError):
        store.read("t")
    assert store.publish("t", "again") == 0  # created anew from offset 0
    with pytest.raises(UnknownTopicError, match="topic 'nope' does not exist"):
        store.topic("nope").delete()


def test_deleting_a_topic_keeps_the_sink_ledger_keyed_by_sink_id(store_path):
    with Store(store_path) as store:
        store.commit_sink_batch("s", 0, TopicRows("t", ()))
        store.topic("t").delete()
        assert store.commit_sink_batch("s", 0, TopicRows("t", ())).skipped
        assert not store.topic("t").exists()


def test_unknown_settings_are_named(store):
    with pytest.raises(OptionError, match="unknown topic setting"):
        store.topic("t").configure(retention=5)


def test_a_topic_started_at_an_offset_is_a_pruned_topic_that_publishes_from_there(store):
    store.topic("copy").start_at(1000)
    store.topic("copy").start_at(1000)  # idempotent for that offset
    assert store.topic("copy").bounds() == (1000, 1000)
    assert list(store.publish_many("copy", ["a", "b"])) == [1000, 1001]
    assert [(e.offset, e.value) for e in store.read("copy", 1000)] == [(1000, "a"), (1001, "b")]
    assert store.check().ok
    with pytest.raises(TopicExistsError, match="'copy' already holds events up to offset 1001"):
        store.topic("copy").start_at(5)
