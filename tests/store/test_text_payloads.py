"""Text SQLite cannot store (a lone surrogate) is a PayloadError naming where; nothing written.

Python strings may hold lone surrogates (from ``errors="surrogateescape"``
decodes, or broken JSON escapes); SQLite keeps text as UTF-8, which cannot.
"""

from __future__ import annotations

import pytest

from spark_queue.errors import PayloadError
from spark_queue.store import NewJob, Record

BAD = "caf\ud800"


@pytest.mark.parametrize(
    ("items", "named"),
    [
        ([BAD], "item 0 of the batch: value holds '\\ud800' at position 3"),
        (["fine", "ünïcode", BAD], "item 2 of the batch: value holds"),
        ([Record(value="v", key=BAD)], "key holds"),
        ([Record(value="v", headers={"h": BAD})], "headers (as JSON) holds"),
        ([{"name": BAD}], "value (as JSON) holds"),
    ],
    ids=["value", "third-of-a-batch", "key", "header", "json"],
)
def test_a_lone_surrogate_fails_the_publish_naming_the_item_and_writes_nothing(
    store, items, named
):
    store.publish("t", "before")
    with pytest.raises(PayloadError) as raised:
        store.publish_many("t", items)
    assert named in str(raised.value) and "UTF-8" in str(raised.value)
    assert [e.value for e in store.read("t")] == ["before"]
    assert store.topic("t").bounds() == (0, 1)


def test_non_ascii_text_that_utf8_can_hold_is_stored_and_read_back_unchanged(store):
    values = ["ünïcode", "日本語", "emoji 🎉", {"k": "ß"}]
    store.publish_many("t", values)
    store.publish("t", "v", key="ключ", headers={"h": "välue"})
    events = store.read("t")
    assert [e.value for e in events[:4]] == values
    assert (events[4].key, events[4].headers) == ("ключ", {"h": "välue"})


@pytest.mark.parametrize(
    "job",
    [BAD, NewJob(BAD), NewJob("payload", idempotency_key=BAD)],
    ids=["payload", "new-job-payload", "idempotency-key"],
)
def test_a_lone_surrogate_fails_the_enqueue_and_writes_nothing(store, job):
    q = store.queue("q")
    q.enqueue("before")
    with pytest.raises(PayloadError, match="UTF-8"):
        q.enqueue_many(["fine", job])
    assert [j.payload for j in q.peek(10)] == ["before"]
