"""Export to a real broker: Kafka's offset N is the store's offset N (minus a fixed shift),
a rerun continues where Kafka ends, a foreign target is refused, and the way back
(import) gives the same topic."""

from __future__ import annotations

import threading
import time

import pytest

from spark_queue.errors import KafkaError, KafkaTargetMismatchError, KafkaTopicError
from spark_queue.kafka.export import export_topics
from spark_queue.kafka.importing import import_topic
from spark_queue.kafka.link import KafkaLink
from spark_queue.kafka.records import checksum, from_message, from_store_row
from spark_queue.store import Record, Store


def mixed_events(n: int, start: int = 0) -> list:
    """Every payload shape: JSON, text, bytes, null; keys text/bytes/none; headers; times."""
    shapes = [
        lambda i: Record({"i": i, "name": f"n{i}"}, key=f"k{i % 7}", headers={"h": str(i)},
                         timestamp_ms=1_600_000_000_000 + i * 1000),
        lambda i: Record(f"text {i}", key=b"\x00\xff" + bytes([i % 256])),
        lambda i: Record(bytes([i % 256, 255, 0]), headers={"a": "1", "b": "é"}),
        lambda i: Record(None, key=f"gone-{i}"),
        lambda i: i,
    ]
    return [shapes[i % len(shapes)](i) for i in range(start, start + n)]


def event_tuples(store: Store, topic: str) -> list[tuple]:
    return [(e.offset, e.key, e.value, e.value_type, e.headers, e.timestamp_ms)
            for e in store.read(topic, store.topic(topic).earliest_offset())]


def kafka_contents(kafka, topic: str, start: int = 0) -> list:
    with KafkaLink(kafka) as link:
        _, high = link.watermarks(topic)
        return [(m.offset, from_message(m)) for m in link.read_messages(topic, 0, start, high)]


def topic_config(kafka, topic: str) -> dict[str, str]:
    with KafkaLink(kafka) as link:
        return link.topic_config(topic)


def test_store_to_kafka_to_store_gives_the_same_topic_offset_for_offset(
        any_kafka, prefix, store, store_path, tmp_path):
    kafka = any_kafka  # 4.1 and 3.7, the oldest broker supported
    store.publish_many("orders", mixed_events(1200))
    store.publish_many("empty-not", ["only one"])

    results = export_topics(store_path, kafka, prefix=prefix)

    assert [(r.topic, r.kafka_topic, r.shift, r.written, r.kafka_start, r.kafka_end)
            for r in results] == [("empty-not", prefix + "empty-not", 0, 1, 0, 1),
                                  ("orders", prefix + "orders", 0, 1200, 0, 1200)]
    mine = [from_store_row(row) for row in store.read_arrow("orders").to_pylist()]
    theirs = kafka_contents(kafka, prefix + "orders")
    assert [offset for offset, _ in theirs] == list(range(1200))
    assert [content for _, content in theirs] == mine  # keys, value bytes, headers, CreateTime

    assert topic_config(kafka, prefix + "orders")["retention.ms"] == "-1"  # keeps every event

    back = str(tmp_path / "back.sqlite")
    imported = import_topic(back, kafka, prefix + "orders", into="orders")
    assert [(r.topic, r.imported, r.store_start) for r in imported] == [("orders", 1200, 0)]
    with Store(back) as copy:
        assert event_tuples(copy, "orders") == event_tuples(store, "orders")


def test_a_rerun_continues_where_kafka_ends_and_writes_nothing_twice(kafka, prefix, store,
                                                                      store_path):
    store.publish_many("t", mixed_events(300))
    [first] = export_topics(store_path, kafka, ["t"], prefix=prefix)
    [again] = export_topics(store_path, kafka.bootstrap, ["t"], prefix=prefix)  # a string too
    store.publish_many("t", mixed_events(50, start=300))
    [more] = export_topics(store_path, kafka, ["t"], prefix=prefix)

    assert (first.written, again.written, more.written) == (300, 0, 50)
    assert (more.kafka_start, more.kafka_end) == (0, 350)
    assert first.checksum == again.checksum
    mine = [from_store_row(row) for row in store.read_arrow("t").to_pylist()]
    assert [c for _, c in kafka_contents(kafka, prefix + "t")] == mine


def test_a_target_holding_other_records_is_refused_naming_it_and_left_unchanged(
        kafka, prefix, store, store_path):
    store.publish_many("a", ["a0", "a1", "a2"])
    export_topics(store_path, kafka, ["a"], prefix=prefix)
    # Another store's topic of the same name, with other events, into a's copy.
    other = store_path + ".other"
    with Store(other) as second:
        second.publish_many("a", ["b0", "b1", "b2", "b3"])
    with pytest.raises(KafkaTargetMismatchError, match=f"'{prefix}a'.*other records"):
        export_topics(other, kafka, ["a"], prefix=prefix)
    with Store(other) as second:
        second.publish_many("a", ["x"] * 10)  # now longer than what Kafka holds, still other
    with pytest.raises(KafkaTargetMismatchError, match=f"'{prefix}a'"):
        export_topics(other, kafka, ["a"], prefix=prefix)
    assert [c.value for _, c in kafka_contents(kafka, prefix + "a")] == [b"a0", b"a1", b"a2"]


def test_a_target_with_more_records_than_the_store_is_refused(kafka, prefix, store, store_path):
    store.publish_many("t", ["0", "1", "2", "3"])
    export_topics(store_path, kafka, ["t"], prefix=prefix)
    shorter = store_path + ".short"
    with Store(shorter) as copy:
        copy.publish_many("t", ["0", "1"])
    with pytest.raises(KafkaTargetMismatchError, match="more than store topic 't' has"):
        export_topics(shorter, kafka, ["t"], prefix=prefix)


def test_a_kafka_topic_of_several_partitions_is_refused_naming_it(kafka, prefix, store,
                                                                   store_path):
    name = prefix + "t"
    with KafkaLink(kafka) as link:
        link.create_topic(name, {}, partitions=3)
    store.publish("t", "x")
    with pytest.raises(KafkaTopicError, match=f"'{name}' has 3 partitions"):
        export_topics(store_path, kafka, ["t"], prefix=prefix)


def test_a_topic_whose_head_retention_removed_starts_at_a_fixed_shift(kafka, prefix, store,
                                                                       store_path):
    store.publish_many("t", [f"v{i}" for i in range(100)])
    store.topic("t").prune(retention_rows=40, force=True)
    assert store.topic("t").bounds() == (60, 100)

    [first] = export_topics(store_path, kafka, ["t"], prefix=prefix)
    assert (first.shift, first.kafka_start, first.kafka_end) == (60, 0, 40)
    assert store.topic("t").mirror_shift() == 60

    store.publish_many("t", [f"v{i}" for i in range(100, 120)])
    store.topic("t").prune(retention_rows=30, force=True)  # the head moves on; the shift does not
    [second] = export_topics(store_path, kafka, ["t"], prefix=prefix)
    assert (second.shift, second.written, second.kafka_end) == (60, 20, 60)
    values = [c.value for _, c in kafka_contents(kafka, prefix + "t")]
    assert values == [f"v{i}".encode() for i in range(60, 120)]  # Kafka n = store n - 60

    # The way back with the shift: the store's own offsets again.
    back = store_path + ".back"
    [imported] = import_topic(back, kafka, prefix + "t", into="t", first_offset=60)
    assert (imported.store_start, imported.imported) == (60, 60)
    with Store(back) as copy:
        assert copy.topic("t").bounds() == (60, 120)
        assert event_tuples(copy, "t")[30:] == event_tuples(store, "t")

    store.publish_many("t", ["lost", "kept"])
    store.topic("t").prune(retention_rows=1, force=True)  # removes an event Kafka never got
    with pytest.raises(KafkaTargetMismatchError, match="cannot be continued without a gap"):
        export_topics(store_path, kafka, ["t"], prefix=prefix)


def test_follow_mirrors_new_events_until_stopped(kafka, prefix, store, store_path):
    store.publish_many("t", ["before"])
    stop = threading.Event()
    results: list = []
    runner = threading.Thread(target=lambda: results.extend(export_topics(
        store_path, kafka, prefix=prefix, follow=True, poll_ms=50, stop=stop)))
    runner.start()
    try:
        for i in range(3):
            store.publish("t", f"after {i}")
        store.publish("new", "a topic created while following")
        deadline = time.monotonic() + 30
        while (len(kafka_contents(kafka, prefix + "t")) < 4
               or KafkaLink(kafka).partitions(prefix + "new") is None
               or len(kafka_contents(kafka, prefix + "new")) < 1):
            assert time.monotonic() < deadline, "follow did not mirror the new events"
            time.sleep(0.1)
    finally:
        stop.set()
        runner.join(60)
    assert [(r.topic, r.kafka_end) for r in results] == [("new", 1), ("t", 4)]
    mine = [from_store_row(row) for row in store.read_arrow("t").to_pylist()]
    assert results[1].checksum == checksum(mine)


def test_an_event_too_large_for_kafka_is_named_and_the_events_before_it_are_in_kafka(
        kafka, prefix, store, store_path):
    store.publish_many("t", ["a", "b", "x" * 2_000_000, "c"])
    with pytest.raises(KafkaError, match="refused store topic 't''s event 2 .*max.message.bytes"):
        export_topics(store_path, kafka, ["t"], prefix=prefix)
    assert [c.value for _, c in kafka_contents(kafka, prefix + "t")] == [b"a", b"b"]
