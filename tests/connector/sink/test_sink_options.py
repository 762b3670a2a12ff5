"""The sink's options parser, without Spark: every rule (the README check is test_options_docs)."""

from __future__ import annotations

import logging

import pytest

from spark_queue.connector import option_table
from spark_queue.connector.sink.sink_options import (
    SinkOptions,
    parse_sink_options,
)
from spark_queue.defaults import SINK_BUSY_TIMEOUT_MS
from spark_queue.errors import OptionError, SparkQueueError


def parse(streaming=True, **options):
    return SinkOptions.parse({k: str(v) for k, v in options.items()}, streaming=streaming)


def test_topic_option_parses_with_defaults():
    opts = parse(path="/tmp/s.sqlite", topic="events")
    assert opts == SinkOptions(path="/tmp/s.sqlite", topic="events")
    assert opts.target == "topic"
    assert opts.durability == "normal"
    assert opts.busy_timeout_ms == SINK_BUSY_TIMEOUT_MS


def test_option_names_are_case_insensitive():
    opts = SinkOptions.parse(
        {
            "PATH": "/s",
            "Queue": "jobs",
            "SINKID": "s1",
            "BusyTimeoutMs": "10",
            "DURABILITY": "FULL",
        },
        streaming=True,
    )
    assert (opts.queue, opts.sink_id, opts.busy_timeout_ms, opts.durability) == (
        "jobs",
        "s1",
        10,
        "full",
    )
    assert opts.target == "queue"


def test_missing_path_is_an_error_that_says_how_to_give_it():
    with pytest.raises(OptionError, match=r"sqliteq sink needs option 'path'.*\.save\("):
        parse(topic="t")


def test_topic_and_queue_exclude_each_other():
    with pytest.raises(OptionError, match="not both"):
        parse(path="/s", topic="t", queue="q")


def test_neither_topic_nor_queue_is_left_to_the_schema_check():
    # Routing by a `topic` column is decided with the schema (sink_schema).
    assert parse(path="/s").target == "topic"


@pytest.mark.parametrize("key", ["topic", "queue", "sinkId"])
def test_bad_names_are_rejected_with_the_option_named(key):
    with pytest.raises(OptionError, match=f"option '{key}' must be"):
        parse(path="/s", **{key: "has space"})


@pytest.mark.parametrize("value", ["sometimes", ""])
def test_unknown_durability_is_rejected_not_defaulted(value):
    with pytest.raises(OptionError,
                       match="'durability' must be one of full, normal, off, replicated"):
        parse(path="/s", topic="t", durability=value)


@pytest.mark.parametrize("value", ["-1", "soon", "1.5"])
def test_busy_timeout_must_be_a_non_negative_integer(value):
    with pytest.raises(OptionError, match="'busyTimeoutMs' must be an integer >= 0"):
        parse(path="/s", topic="t", busyTimeoutMs=value)


def test_batch_id_is_for_batch_writes_with_a_sink_id():
    opts = parse(streaming=False, path="/s", topic="t", sinkId="daily", batchId="7")
    assert (opts.sink_id, opts.batch_id) == ("daily", 7)
    with pytest.raises(OptionError, match="'batchId' is for batch writes only"):
        parse(streaming=True, path="/s", topic="t", sinkId="x", batchId="1")
    with pytest.raises(OptionError, match="'batchId' needs option 'sinkId'"):
        parse(streaming=False, path="/s", topic="t", batchId="1")
    with pytest.raises(OptionError, match="'sinkId' in a batch write needs option 'batchId'"):
        parse(streaming=False, path="/s", topic="t", sinkId="x")
    with pytest.raises(OptionError, match="'batchId' must be an integer >= 0"):
        parse(streaming=False, path="/s", topic="t", sinkId="x", batchId="-2")


def test_option_errors_share_the_project_base_class():
    assert issubclass(OptionError, SparkQueueError) and issubclass(OptionError, ValueError)


def test_options_are_picklable():
    import pickle

    opts = parse(path="/s", queue="q", sinkId="a")
    assert pickle.loads(pickle.dumps(opts)) == opts


def test_a_misspelled_option_fails_with_a_hint_instead_of_becoming_a_default():
    with pytest.raises(OptionError) as info:
        parse(path="/s", topic="t", durabilty="full")
    message = str(info.value)
    assert "sink does not know option(s) 'durabilty' (did you mean 'durability'?)" in message
    assert "known options: path, createStore, topic, queue, sinkId, batchId, durability, " \
           "busyTimeoutMs" in (
        message
    )


def test_kafka_client_options_are_ignored_with_one_warning_naming_them(caplog, monkeypatch):
    monkeypatch.setattr(option_table, "ignored_warnings_logged", set())  # once per process
    kafka = {"kafka.bootstrap.servers": "host1:9092", "kafka.acks": "all",
             "includeHeaders": "true"}
    with caplog.at_level(logging.WARNING, logger="spark_queue.connector"):
        for _ in range(3):  # Spark asks for the writer again on every micro-batch
            opts = parse_sink_options({"path": "/s", "topic": "t", **kafka}, streaming=True)
    assert opts == SinkOptions(path="/s", topic="t")
    warnings = [r.getMessage() for r in caplog.records if "ignores" in r.getMessage()]
    assert len(warnings) == 1
    assert "'includeHeaders', 'kafka.acks', 'kafka.bootstrap.servers'" in warnings[0]
    assert warnings[0].startswith("sqliteq sink ignores the Kafka-only option(s)")


def test_sparks_checkpoint_location_is_accepted_silently(caplog):
    with caplog.at_level(logging.WARNING, logger="spark_queue.connector"):
        opts = parse(path="/s", topic="t", checkpointLocation="/ck")
    # Kept: a sink without sinkId records its ledger entry for its checkpoint (issue #59).
    assert opts == SinkOptions(path="/s", topic="t", checkpoint_location="/ck")
    assert not caplog.records


def test_source_only_kafka_options_are_unknown_on_the_sink():
    with pytest.raises(OptionError, match="sink does not know option.*'subscribe'"):
        parse(path="/s", topic="t", subscribe="t")


def test_sink_refuses_async_progress_tracking_saying_why():
    from spark_queue.connector.sink.sink_options import parse_sink_options

    with pytest.raises(OptionError, match="asyncProgressTrackingEnabled=true.*rows would be lost"):
        parse_sink_options(
            {"path": "/tmp/x.sqlite", "topic": "t", "asyncProgressTrackingEnabled": "true"},
            streaming=True,
        )
    parsed = parse_sink_options(
        {"path": "/tmp/x.sqlite", "topic": "t", "asyncProgressTrackingEnabled": "false"},
        streaming=True,
    )
    assert parsed.topic == "t"


def test_sink_accepts_the_options_spark_itself_passes_to_a_stream_sink():
    from spark_queue.connector.sink.sink_options import parse_sink_options

    parsed = parse_sink_options(
        {"path": "/tmp/x.sqlite", "queue": "q", "queryName": "alerts",
         "checkpointLocation": "/tmp/ckpt"},
        streaming=True,
    )
    assert parsed.queue == "q"
