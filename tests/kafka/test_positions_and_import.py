"""Consumer offsets become a Kafka group's committed offsets (shifted); a Kafka topic of
several partitions, or a time range of one, comes into a store as documented."""

from __future__ import annotations

import pytest

from spark_queue.errors import KafkaTopicError, TopicExistsError
from spark_queue.kafka.export import export_topics
from spark_queue.kafka.importing import import_topic
from spark_queue.kafka.link import KafkaLink
from spark_queue.kafka.positions import commit_consumer_offsets
from spark_queue.kafka.records import Content
from spark_queue.store import Record, Store
from tests.cli.cli_run import one_line_error, run_json


def group_offsets(kafka, group: str, topics: list[str]) -> dict[str, int]:
    with KafkaLink(kafka) as link:
        return link.group_offsets(group, topics)


def test_saved_consumer_offsets_become_the_groups_offsets_shifted(kafka, prefix, store,
                                                                  store_path):
    store.publish_many("a", range(10))
    store.publish_many("b", range(10))
    store.topic("b").prune(retention_rows=6, force=True)  # b's copy starts at store offset 4
    store.commit_offsets("billing", {"a": 7, "b": 9})
    export_topics(store_path, kafka, prefix=prefix)

    done = commit_consumer_offsets(store_path, kafka, "billing", group=prefix + "g",
                                   prefix=prefix)

    assert [(g.topic, g.store_offset, g.kafka_offset) for g in done] == [("a", 7, 7), ("b", 9, 5)]
    assert group_offsets(kafka, prefix + "g", [prefix + "a", prefix + "b"]) == {
        prefix + "a": 7, prefix + "b": 5}


def test_offsets_past_what_kafka_holds_are_refused_before_any_is_committed(kafka, prefix, store,
                                                                          store_path):
    store.publish_many("a", range(5))
    export_topics(store_path, kafka, prefix=prefix)
    store.publish_many("a", range(5))  # not exported yet
    store.commit_offsets("c", {"a": 8})
    with pytest.raises(KafkaTopicError, match="ends at offset 5, before the consumer's position 8"):
        commit_consumer_offsets(store_path, kafka, "c", group=prefix + "g", prefix=prefix)


def test_the_cli_commits_offsets_and_names_a_topic_never_exported(capsys, kafka, prefix, store,
                                                                 store_path):
    store.publish_many("a", range(5))
    store.commit_offsets("c", {"a": 3})
    err = one_line_error(capsys, "kafka", "commit-offsets", store_path, "c", "--bootstrap",
                         kafka.bootstrap, "--prefix", prefix)
    assert "'a' was never exported" in err
    run_json(capsys, "kafka", "export", store_path, "--bootstrap", kafka.bootstrap,
             "--prefix", prefix)
    rows = run_json(capsys, "kafka", "commit-offsets", store_path, "c", "--bootstrap",
                    kafka.bootstrap, "--prefix", prefix, "--group", prefix + "g")
    assert rows == [{"group": prefix + "g", "kafka_topic": prefix + "a", "store_offset": 3,
                     "kafka_offset": 3}]


def produce(kafka, topic: str, partitions: int, records: list[tuple[int, bytes, int]]) -> None:
    """(partition, value, timestamp) records into a new topic of ``partitions``."""
    with KafkaLink(kafka) as link:
        link.create_topic(topic, {}, partitions=partitions)
        for partition, value, stamp in records:
            link.produce(topic, [Content(b"k%d" % partition, value, (("p", str(partition)),),
                                         stamp)], partition=partition)
        link.flush()


def test_several_partitions_become_one_store_topic_each_keeping_keys_headers_and_times(
        kafka, prefix, store_path):
    name = prefix + "clicks"
    records = [(i % 3, b'{"i": %d}' % i, 1_700_000_000_000 + i) for i in range(30)]
    produce(kafka, name, 3, records)

    done = import_topic(store_path, kafka, name)

    assert [(r.topic, r.partition, r.imported) for r in done] == [
        (f"{name}.{p}", p, 10) for p in range(3)]
    with Store(store_path) as store:
        for p in range(3):
            events = store.read(f"{name}.{p}")
            assert [(e.offset, e.key, e.value, e.headers, e.timestamp_ms) for e in events] == [
                (n, f"k{p}", {"i": i}, {"p": str(p)}, 1_700_000_000_000 + i)
                for n, i in enumerate(range(p, 30, 3))]


def test_a_time_range_imports_the_records_stamped_in_it(capsys, kafka, prefix, store_path):
    name = prefix + "t"
    produce(kafka, name, 1, [(0, b"v%d" % i, 1_700_000_000_000 + i * 1000) for i in range(10)])
    rows = run_json(capsys, "kafka", "import", store_path, name, "--bootstrap", kafka.bootstrap,
                    "--into", "t", "--since", "1700000003000", "--until", "1700000006000")
    assert [(r["topic"], r["kafka_first"], r["kafka_end"], r["imported"], r["store_first"],
             r["gaps"]) for r in rows] == [("t", 3, 6, 3, 3, 0)]
    with Store(store_path) as store:  # Kafka's numbering: store offset n = Kafka offset n
        assert [(e.offset, e.value) for e in store.read("t", 3)] == [
            (3, "v3"), (4, "v4"), (5, "v5")]
        assert store.topic("t").bounds() == (3, 6)
    with pytest.raises(TopicExistsError, match="'t' holds or held events"):
        import_topic(store_path, kafka, name, into="t")
    # Continued where the store ends: the records from Kafka offset 6 on append.
    [more] = import_topic(store_path, kafka, name, into="t", since_ms=1_700_000_006_000)
    assert (more.kafka_start, more.store_start, more.imported) == (6, 6, 4)


def test_an_unknown_kafka_topic_is_named(kafka, prefix, store_path):
    with pytest.raises(KafkaTopicError, match=f"'{prefix}nope' does not exist"):
        import_topic(store_path, kafka, prefix + "nope")
    # Asking never made the broker create it (auto.create.topics.enable is Kafka's default).
    assert KafkaLink(kafka).partitions(prefix + "nope") is None


def test_the_export_summary_names_each_topic_with_its_offsets_and_checksum(capsys, kafka,
                                                                          prefix, store_path):
    with Store(store_path) as store:
        store.publish_many("t", [Record("x", key="k")] * 3)
    [row] = run_json(capsys, "kafka", "export", store_path, "--bootstrap", kafka.bootstrap,
                     "--prefix", prefix)
    assert {k: row[k] for k in ("topic", "kafka_topic", "shift", "written", "kafka_first",
                                "kafka_end", "records", "sampled")} == {
        "topic": "t", "kafka_topic": prefix + "t", "shift": 0, "written": 3, "kafka_first": 0,
        "kafka_end": 3, "records": 3, "sampled": 3}
    assert len(row["checksum"]) == 16
