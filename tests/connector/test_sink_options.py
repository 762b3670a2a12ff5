"""The sink's options parser, without Spark: every rule, and the README table agrees with it."""

from __future__ import annotations

import pathlib
import re

import pytest

from spark_queue.connector.sink_options import (
    DEFAULT_SINK_BUSY_TIMEOUT_MS,
    SINK_OPTIONS,
    SinkOptions,
)
from spark_queue.errors import OptionError, SparkQueueError

README = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def parse(streaming=True, **options):
    return SinkOptions.parse({k: str(v) for k, v in options.items()}, streaming=streaming)


def test_topic_option_parses_with_defaults():
    opts = parse(path="/tmp/s.sqlite", topic="events")
    assert opts == SinkOptions(path="/tmp/s.sqlite", topic="events")
    assert opts.target == "topic"
    assert opts.durability == "normal"
    assert opts.busy_timeout_ms == DEFAULT_SINK_BUSY_TIMEOUT_MS


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
    with pytest.raises(OptionError, match="'durability' must be one of full, normal, off"):
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


def test_readme_sink_table_lists_exactly_the_parsed_options():
    section = README[README.index("## Writing with Spark") :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    table = re.findall(r"^\| `([A-Za-z]+)` \|", section, re.M)
    assert sorted(table) == sorted(SINK_OPTIONS)


def test_datasource_docstring_documents_every_sink_option():
    from spark_queue.connector.datasource import SqliteQueueDataSource

    doc = SqliteQueueDataSource.__doc__
    writing = doc[doc.index("Writing\n") :]
    writing = writing[writing.index("Options") : writing.index("Columns:")]
    documented = set(re.findall(r"^\s+- ``([A-Za-z]+)``[ :]", writing, re.M))
    assert documented == set(SINK_OPTIONS)
