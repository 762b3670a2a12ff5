"""The source options parser, without Spark: defaults, case, and every rejection message."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_queue.connector.source.source_options import (
    OPTION_NAMES,
    SOURCE_OPTIONS,
    parse_source_options,
)
from spark_queue.errors import OptionError, SparkQueueError

BASE = {"path": "/data/s.sqlite", "topic": "clicks"}


def parse(streaming=True, **extra):
    return parse_source_options({**BASE, **extra}, streaming=streaming)


def rejects(match, streaming=True, base=BASE, **extra):
    with pytest.raises(OptionError, match=match) as info:
        parse_source_options({**base, **extra}, streaming=streaming)
    return str(info.value)


def test_defaults_are_the_documented_ones():
    opts = parse()
    assert opts.path == "/data/s.sqlite" and opts.topics == ("clicks",)
    assert opts.starting == "earliest" and opts.ending == "latest"
    assert opts.max_rows_per_trigger is None and opts.min_rows_per_trigger is None
    assert opts.max_trigger_delay_ms == 15 * 60_000
    assert opts.fail_on_data_loss is True and opts.include_headers is False
    assert (opts.key_format, opts.value_format) == ("binary", "binary")
    assert opts.mode == "FAILFAST" and opts.corrupt_record_column == "_corrupt_record"
    # rowsPerPartition unset: derived from the range and the driver's CPUs when planned
    assert (opts.rows_per_partition, opts.min_partitions) == (None, 1)
    assert opts.read_path == "auto"
    assert (opts.latency_mode, opts.low_latency_max_rows) == ("auto", 10_000)
    defaults = {spec.name: spec.doc_default for spec in SOURCE_OPTIONS}
    assert defaults["startingOffsets"] == "earliest" and defaults["readPath"] == "auto"
    assert opts.timestamp_strategy == "latest" and defaults["maxTriggerDelay"] == "15m"


def test_option_names_are_case_insensitive_as_spark_lowercases_them():
    opts = parse_source_options(
        {"PATH": "/x", "topics": "a, b", "maxrowspertrigger": "10", "FAILONDATALOSS": "False"},
        streaming=True,
    )
    assert opts.topics == ("a", "b")
    assert opts.max_rows_per_trigger == 10 and opts.fail_on_data_loss is False


def test_errors_share_the_project_base_and_value_error():
    with pytest.raises(SparkQueueError):
        parse(maxRowsPerTrigger="0")
    with pytest.raises(ValueError):
        parse(maxRowsPerTrigger="0")


@pytest.mark.parametrize("value", ["0", "-5", "abc", "1.5", ""])
def test_max_rows_per_trigger_must_be_a_positive_integer(value):
    message = rejects("maxRowsPerTrigger", maxRowsPerTrigger=value)
    assert message == (
        f"sqliteq option 'maxRowsPerTrigger' must be a positive integer; got '{value}'."
    )


def test_alias_max_offsets_per_trigger_and_not_both():
    assert parse(maxOffsetsPerTrigger="7").max_rows_per_trigger == 7
    rejects("both set", maxRowsPerTrigger="5", maxOffsetsPerTrigger="6")
    rejects("'maxOffsetsPerTrigger' must be a positive integer; got 'x'", maxOffsetsPerTrigger="x")


def test_unknown_starting_offsets_names_value_and_allowed():
    message = rejects("startingOffsets", startingOffsets="newest")
    assert "'newest'" in message and "earliest, latest, committed" in message


def test_missing_path_is_rejected():
    rejects("'path' is required", base={"topic": "t"})
    rejects("'path' is required", base={"topic": "t", "path": "  "})


def test_missing_topic_is_rejected():
    message = rejects("exactly one of", base={"path": "/x"})
    assert "'topic', 'topics' or 'topicPattern'" in message and "none was given" in message


def test_topic_and_topic_pattern_together_are_rejected():
    message = rejects("exactly one of", topicPattern="c.*")
    assert "got topic, topicPattern" in message


def test_unknown_topic_in_json_offsets_is_rejected():
    message = rejects("names topic 'other'", startingOffsets='{"other": 3}')
    assert "topic=clicks" in message
    rejects("names topic 'zz'", streaming=False, endingOffsets='{"zz": 3}')
    pattern = {"path": "/x", "topicPattern": "c.*"}
    assert parse_source_options(
        {**pattern, "startingOffsets": '{"clicks": 4}'}, streaming=True
    ).starting_offsets == {"clicks": 4}
    rejects("names topic 'dogs'", base=pattern, startingOffsets='{"dogs": 4}')


@pytest.mark.parametrize(
    "value", ['{"clicks": -3}', '{"clicks": 1.5}', '{"clicks": "1"}', "[1]", "{}", "{bad"]
)
def test_malformed_json_offsets_are_rejected(value):
    rejects("'startingOffsets' must be .*JSON object", startingOffsets=value)


def test_json_offsets_accept_kafka_sentinels():
    opts = parse(startingOffsets=json.dumps({"clicks": -1}))
    assert opts.starting == "json" and opts.starting_offsets == {"clicks": -1}


def test_committed_needs_a_consumer():
    rejects("needs the option 'consumer'", startingOffsets="committed")
    assert parse(startingOffsets="COMMITTED", consumer="c1").starting == "committed"


def test_batch_only_and_stream_only_options_are_kept_apart():
    rejects("batch reads", endingOffsets="latest")
    rejects("streaming reads only", streaming=False, maxRowsPerTrigger="5")
    rejects("must be earliest, committed or JSON for a batch read", streaming=False,
            startingOffsets="latest")
    # schema() cannot tell the two apart and checks everything else.
    assert parse(streaming=None, endingOffsets="latest").ending == "latest"


def test_ending_offsets_json_for_batch_reads():
    opts = parse(streaming=False, endingOffsets='{"clicks": 10}')
    assert opts.ending == "json" and opts.ending_offsets == {"clicks": 10}
    rejects("endingOffsets", streaming=False, endingOffsets="earliest")


def test_min_rows_and_trigger_delay():
    opts = parse(minRowsPerTrigger="500", maxTriggerDelay="2s")
    assert opts.min_rows_per_trigger == 500 and opts.max_trigger_delay_ms == 2000
    assert parse(maxTriggerDelay="250").max_trigger_delay_ms == 250
    assert parse(maxTriggerDelay="1h").max_trigger_delay_ms == 3_600_000
    rejects("'maxTriggerDelay' must be a duration", maxTriggerDelay="soon")
    rejects("must not exceed", minRowsPerTrigger="10", maxRowsPerTrigger="5")


def test_starting_timestamp_in_ms_or_iso():
    assert parse(startingTimestamp="1700000000000").starting_timestamp_ms == 1_700_000_000_000
    assert parse(startingTimestamp="2023-11-14T22:13:20Z").starting_timestamp_ms == (
        1_700_000_000_000
    )
    # no zone means UTC
    assert parse(startingTimestamp="2023-11-14T22:13:20").starting_timestamp_ms == (
        1_700_000_000_000
    )
    rejects("'startingTimestamp' must be", startingTimestamp="yesterday")


def test_starting_and_ending_options_take_kafkas_precedence():
    # startingTimestamp > startingOffsetsByTimestamp > startingOffsets, as Kafka documents.
    opts = parse(startingTimestamp="5", startingOffsetsByTimestamp='{"clicks": 7}',
                 startingOffsets="latest")
    assert (opts.starting, opts.starting_timestamp_ms) == ("timestamp", 5)
    opts = parse(startingOffsetsByTimestamp='{"clicks": {"0": 7}}', startingOffsets="latest")
    assert (opts.starting, opts.starting_timestamps) == ("timestamps", (("clicks", 7),))
    opts = parse(streaming=False, endingTimestamp="9", endingOffsetsByTimestamp='{"clicks": 1}',
                 endingOffsets="latest")
    assert (opts.ending, opts.ending_timestamp_ms) == ("timestamp", 9)
    opts = parse(streaming=False, endingOffsetsByTimestamp='{"clicks": {"0": -1}}')
    assert (opts.ending, opts.ending_timestamps) == ("timestamps", (("clicks", -1),))


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("failOnDataLoss", "yes", "true or false"),
        ("includeHeaders", "1", "true or false"),
        ("keyFormat", "json", "binary or string"),
        ("valueFormat", "text", "binary or string"),
        ("mode", "DROPMALFORMED", "FAILFAST or PERMISSIVE"),
        ("readPath", "network", "auto or executor or driver"),
        ("rowsPerPartition", "0", "a positive integer"),
        ("minPartitions", "two", "a positive integer"),
        ("latencyMode", "fast", "auto or throughput or low"),
        ("lowLatencyMaxRows", "0", "a positive integer"),
        ("topicPattern", "(", "a valid regular expression"),
    ],
)
def test_each_option_names_itself_its_value_and_what_is_allowed(name, value, allowed):
    base = {"path": "/x"} if name == "topicPattern" else BASE
    message = rejects(name, base=base, **{name: value})
    assert f"sqliteq option '{name}' must be {allowed}" in message
    assert repr(value) in message


def test_unknown_option_is_rejected_with_a_hint():
    message = rejects("does not know", maxRowPerTrigger="5")
    assert "did you mean 'maxRowsPerTrigger'" in message


def test_topics_list_is_validated():
    rejects("no empty entries", base={"path": "/x"}, topics="a,,b")
    rejects("distinct", base={"path": "/x"}, topics="a,a")
    rejects("'topic' must be one topic name", topic="a,b")


def test_subscribes_matches_whole_names_for_patterns():
    opts = parse_source_options({"path": "/x", "topicPattern": "ev.*"}, streaming=True)
    assert opts.subscribes("events") and not opts.subscribes("myevents")


@settings(deadline=None)  # shared, loaded CI machines
@given(st.integers(min_value=1, max_value=10**12))
def test_any_positive_integer_is_accepted(value):
    assert parse(maxRowsPerTrigger=str(value)).max_rows_per_trigger == value


@settings(deadline=None)  # shared, loaded CI machines
@given(st.text(max_size=12))
def test_parser_accepts_or_raises_option_error_never_anything_else(text):
    for name in ("maxRowsPerTrigger", "startingOffsets", "maxTriggerDelay", "startingTimestamp"):
        try:
            parse(**{name: text})
        except OptionError as exc:
            assert f"'{name}'" in str(exc)


def test_option_list_has_no_duplicates():
    assert len({n.lower() for n in OPTION_NAMES}) == len(OPTION_NAMES)
    assert {"subscribe", "subscribePattern", "assign", "minOffsetsPerTrigger"} <= set(OPTION_NAMES)


valid_topic = st.from_regex(r"[A-Za-z0-9_.\-]{1,20}", fullmatch=True)


@settings(deadline=None)
@given(st.dictionaries(valid_topic, st.one_of(st.integers(0, 2**62), st.sampled_from([-2, -1])),
                       min_size=1, max_size=5))
def test_json_offsets_round_trip_exactly_for_subscribed_topics(offsets):
    topics = ",".join(sorted(offsets))
    opts = parse_source_options(
        {"path": "/s.sqlite", "topics": topics, "startingOffsets": json.dumps(offsets)},
        streaming=True,
    )
    assert opts.starting_offsets == offsets


@settings(deadline=None)
@given(st.one_of(st.floats(), st.text(max_size=5), st.booleans(), st.none(),
                 st.integers(max_value=-3), st.lists(st.integers(), max_size=2)))
def test_json_offsets_reject_every_non_offset_value(value):
    with pytest.raises(OptionError, match="startingOffsets"):
        parse_source_options(
            {"path": "/s.sqlite", "topic": "t", "startingOffsets": json.dumps({"t": value})},
            streaming=True,
        )


@pytest.mark.parametrize("form", ["{p}", "file:{p}", "file:///{q}", " file://localhost{p} "])
def test_path_is_a_local_path_or_a_file_uri_of_one(form):
    given = form.format(p="/data/app.sqlite", q="data/app.sqlite")
    assert parse_source_options({"path": given, "topic": "t"}, streaming=True).path == (
        "/data/app.sqlite")


def test_a_path_on_other_storage_is_refused_naming_it():
    with pytest.raises(OptionError, match=r"'path' names 'dbfs:/x/app.sqlite', a dbfs: URI"):
        parse_source_options({"path": "dbfs:/x/app.sqlite", "topic": "t"}, streaming=True)
