"""An export never copies into a Kafka topic whose settings would undo the copy (compaction,
LogAppendTime, a retention shorter than the events' age) unless forced, naming the setting;
the topics it creates take --replication-factor and --topic-config."""

from __future__ import annotations

import pytest

from spark_queue.cli import main
from spark_queue.errors import KafkaTopicError
from spark_queue.kafka.export import TopicOptions, export_topics
from spark_queue.kafka.link import KafkaLink
from spark_queue.kafka.topic_checks import problems
from spark_queue.store import Record
from tests.kafka.test_export import kafka_contents, topic_config

OLD_MS = 1_600_000_000_000  # 2020: older than a day's retention


def make_topic(kafka, name: str, config: dict[str, str]) -> None:
    with KafkaLink(kafka) as link:
        link.create_topic(name, config)


def test_each_setting_that_would_undo_the_copy_is_named_with_its_fix(store):
    store.publish_many("t", [Record("old", timestamp_ms=OLD_MS), Record("new")])
    assert problems({"cleanup.policy": "delete", "retention.ms": "-1"}, store, "t", 0) == []
    found = problems({"cleanup.policy": "compact,delete", "message.timestamp.type":
                      "LogAppendTime", "retention.ms": "86400000"}, store, "t", 0)
    assert [p.split(" ")[0] for p in found] == [
        "cleanup.policy=compact,delete", "message.timestamp.type=LogAppendTime",
        "retention.ms=86400000"]
    assert "events 0 to 0 are older" in found[2]
    assert problems({"retention.ms": "86400000"}, store, "t", 1) == []  # only new ones left


def test_an_existing_topic_that_would_undo_the_copy_is_refused_unless_forced(
        kafka, prefix, store, store_path):
    store.publish_many("t", [Record(f"v{i}", key="same", timestamp_ms=OLD_MS + i)
                             for i in range(3)])
    make_topic(kafka, prefix + "t", {"cleanup.policy": "compact"})
    with pytest.raises(KafkaTopicError, match=r"cleanup\.policy=compact.*--force"):
        export_topics(store_path, kafka, ["t"], prefix=prefix)
    assert kafka_contents(kafka, prefix + "t") == []  # nothing written

    make_topic(kafka, prefix + "u", {"retention.ms": "86400000"})
    store.publish_many("u", [Record("old", timestamp_ms=OLD_MS)])
    with pytest.raises(KafkaTopicError, match=r"retention\.ms=86400000"):
        export_topics(store_path, kafka, ["u"], prefix=prefix)

    [forced] = export_topics(store_path, kafka, ["t"], prefix=prefix,
                             topic_options=TopicOptions(force=True))
    assert forced.kafka_end == 3


def test_created_topics_take_the_replication_factor_and_the_topic_config(
        kafka, prefix, store, store_path, capsys):
    store.publish_many("t", ["a"])
    assert main(["kafka", "export", store_path, "--bootstrap", kafka.bootstrap, "--prefix",
                 prefix, "--replication-factor", "1", "--topic-config",
                 "max.message.bytes=2000000"]) == 0, capsys.readouterr().err
    config = topic_config(kafka, prefix + "t")
    assert (config["max.message.bytes"], config["retention.ms"]) == ("2000000", "-1")

    assert main(["kafka", "export", store_path, "--bootstrap", kafka.bootstrap, "--prefix",
                 prefix + "x.", "--topic-config", "cleanup.policy=compact"]) == 1
    assert "--topic-config would create" in capsys.readouterr().err
    assert main(["kafka", "export", store_path, "--bootstrap", kafka.bootstrap, "--prefix",
                 prefix + "y.", "--replication-factor", "3"]) == 1
    assert "--replication-factor" in capsys.readouterr().err
