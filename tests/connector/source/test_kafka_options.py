"""Kafka's source option names and forms mean here what they mean in Kafka (no Spark)."""

from __future__ import annotations

import logging

import pytest

from spark_queue.connector import option_table
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.errors import OptionError


def parse(streaming=True, **options):
    return parse_source_options({"path": "/s.sqlite", **options}, streaming=streaming)


def rejects(match, streaming=True, **options):
    with pytest.raises(OptionError, match=match) as info:
        parse(streaming, **options)
    return str(info.value)


def test_subscribe_is_topics_for_one_topic_or_a_comma_list():
    assert parse(subscribe="clicks").topics == ("clicks",)
    assert parse(subscribe="a, b").topics == ("a", "b") == parse(topics="a,b").topics
    assert parse(subscribe="a").subscription == "subscribe=a"
    rejects("option 'subscribe' must be a comma-separated list", subscribe="a,,b")


def test_subscribe_pattern_is_topic_pattern():
    opts = parse(subscribePattern="topic.*")
    assert opts.topic_pattern == "topic.*" and opts.subscribes("topic1")
    assert not opts.subscribes("other")
    rejects("option 'subscribePattern' must be a valid regular expression", subscribePattern="(")


def test_a_java_only_pattern_fails_at_load_with_the_regex_error():
    message = rejects("option 'subscribePattern' must be a valid regular expression",
                      subscribePattern=r"\p{Alpha}+")
    assert "bad escape" in message


def test_an_option_and_its_kafka_alias_together_are_rejected():
    message = rejects("both set", topics="a", subscribe="b")
    assert "'topics'" in message and "'subscribe'" in message
    rejects("both set", maxRowsPerTrigger="5", maxOffsetsPerTrigger="6")


def test_subscription_forms_exclude_each_other_naming_what_was_given():
    message = rejects("exactly one of", subscribe="a", subscribePattern="a.*")
    assert "got subscribe, subscribePattern" in message
    message = rejects("exactly one of")
    assert "Kafka's 'subscribe', 'subscribePattern' or 'assign'" in message


def test_assign_with_partition_zero_reads_the_listed_topics():
    opts = parse(assign='{"b": [0], "a": [0]}')
    assert opts.topics == ("a", "b") and opts.subscription == "assign=a,b"


@pytest.mark.parametrize("value", ['{"clicks": [0, 3]}', '{"clicks": [3]}'])
def test_assign_names_a_partition_other_than_zero(value):
    message = rejects("option 'assign' names partition 3 of topic 'clicks'", assign=value)
    assert "exactly one partition, 0" in message


@pytest.mark.parametrize("value", ['{"clicks": []}', '{"clicks": 0}', '["clicks"]', "clicks",
                                   '{"clicks": ["0"]}', '{"": [0]}'])
def test_malformed_assign_is_rejected(value):
    rejects("option 'assign' must be a JSON object of topic to partition list", assign=value)


def test_kafka_nested_offset_json_means_the_flat_form():
    nested = parse(topics="a,b", startingOffsets='{"a": {"0": 5}, "b": {"0": -2}}')
    flat = parse(topics="a,b", startingOffsets='{"a": 5, "b": -2}')
    assert nested.starting_offsets == flat.starting_offsets == {"a": 5, "b": -2}
    ending = parse(False, topic="a", endingOffsets='{"a": {"0": 50}}')
    assert ending.ending_offsets == {"a": 50}


def test_kafka_offset_json_naming_another_partition_fails_naming_it():
    message = rejects("names partition 1 of topic 'a'", topic="a",
                      startingOffsets='{"a": {"0": 23, "1": -2}}')
    assert "option 'startingOffsets'" in message
    rejects("'endingOffsets' names partition 2 of topic 'a'", False, topic="a",
            endingOffsets='{"a": {"2": 5}}')


@pytest.mark.parametrize("value", ['{"a": {}}', '{"a": {"0": "5"}}', '{"a": {"0": -3}}'])
def test_malformed_nested_offsets_are_rejected(value):
    rejects("'startingOffsets' must be .*JSON object", topic="a", startingOffsets=value)


def test_min_offsets_per_trigger_is_min_rows_per_trigger():
    assert parse(topic="a", minOffsetsPerTrigger="10").min_rows_per_trigger == 10
    message = rejects("does not know", topic="a", minOffsetPerTrigger="10")
    assert "did you mean 'minOffsetsPerTrigger'" in message
    rejects("'minOffsetsPerTrigger' .* must not exceed 'maxOffsetsPerTrigger'", topic="a",
            minOffsetsPerTrigger="10", maxOffsetsPerTrigger="5")


def test_starting_offsets_by_timestamp_takes_kafkas_json_and_sentinels():
    opts = parse(topics="a,b", startingOffsetsByTimestamp='{"a": {"0": 1000}, "b": {"0": -1}}')
    assert opts.starting == "timestamps" and opts.starting_timestamps == (("a", 1000), ("b", -1))
    rejects("names topic 'zz'", topic="a", startingOffsetsByTimestamp='{"zz": {"0": 1}}')
    rejects("'startingOffsetsByTimestamp' must be a JSON object of topic to timestamp",
            topic="a", startingOffsetsByTimestamp='{"a": {"0": -5}}')
    rejects("names partition 1", topic="a", startingOffsetsByTimestamp='{"a": {"1": 5}}')


def test_ending_timestamps_are_for_batch_reads_only():
    opts = parse(False, topic="a", endingTimestamp="2023-11-14T22:13:20Z")
    assert (opts.ending, opts.ending_timestamp_ms) == ("timestamp", 1_700_000_000_000)
    rejects(r"'endingTimestamp' \('5'\) applies to batch reads", topic="a", endingTimestamp="5")
    rejects("'endingOffsetsByTimestamp' .* applies to batch reads", topic="a",
            endingOffsetsByTimestamp='{"a": 5}')


def test_timestamp_strategy_is_latest_or_error():
    opts = parse(topic="a", startingOffsetsByTimestampStrategy="ERROR")
    assert opts.timestamp_strategy == "error"
    rejects("'startingOffsetsByTimestampStrategy' must be latest or error", topic="a",
            startingOffsetsByTimestampStrategy="earliest")


KAFKA_CLIENT = {
    "kafka.bootstrap.servers": "host1:9092,host2:9092",
    "kafka.group.id": "g",
    "kafka.security.protocol": "SASL_SSL",
    "groupIdPrefix": "spark-kafka-source",
    "kafkaConsumer.pollTimeoutMs": "512",
    "fetchOffset.numRetries": "3",
    "fetchOffset.retryIntervalMs": "10",
}


def test_kafka_client_options_are_ignored_with_one_warning_naming_them(caplog, monkeypatch):
    monkeypatch.setattr(option_table, "ignored_warnings_logged", set())  # once per process
    with caplog.at_level(logging.WARNING, logger="spark_queue.connector"):
        for streaming in (None, True, True):  # schema(), then the reader, per query
            opts = parse(streaming, subscribe="a", **KAFKA_CLIENT)
    assert opts == parse(subscribe="a")
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert warnings[0].startswith("sqliteq source ignores the Kafka-only option(s) ")
    for name in KAFKA_CLIENT:
        assert repr(name) in warnings[0]


def test_any_other_unknown_option_still_fails_with_a_hint():
    message = rejects("does not know option", subscribe="a", subscribePatern="a.*",
                      **{"kafka.bootstrap.servers": "h:1"})
    assert "'subscribepatern' (did you mean 'subscribePattern'?)" in message
