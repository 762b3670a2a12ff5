"""The shift of a topic's exported copy: fixed by the first export, kept, forgotten with
the topic (spark_queue/store/streams/mirrors.py)."""

from __future__ import annotations

import pytest

from spark_queue.errors import CorruptStoreError


def test_the_first_recorded_shift_is_kept_for_good(store):
    store.publish_many("t", range(3))
    assert store.topic("t").mirror_shift() is None
    assert store.topic("t").fix_mirror_shift(2) == 2
    assert store.topic("t").fix_mirror_shift(9) == 2  # a later export applies the first one
    assert store.topic("t").mirror_shift() == 2


def test_deleting_the_topic_forgets_its_shift(store):
    store.publish_many("t", range(3))
    store.topic("t").fix_mirror_shift(1)
    store.topic("t").delete()
    store.publish("t", "new")
    assert store.topic("t").mirror_shift() is None


def test_a_shift_another_client_stored_as_garbage_is_named(store):
    store.publish("t", "x")
    with store.write() as conn:
        conn.execute("INSERT INTO sq_meta (key, value) VALUES ('mirror_shift/t', 'many')")
    with pytest.raises(CorruptStoreError, match="'mirror_shift/t' holds 'many'"):
        store.topic("t").mirror_shift()
