"""Every option of the ``sqliteq`` source: one table, parsed and validated in one place.

Spark hands options over as strings in a case-insensitive mapping (keys may
arrive lowercased). :func:`parse_source_options` reads them through
:data:`SOURCE_TABLE` (unknown names fail with a hint; Kafka client options
are ignored with a warning) and checks how options combine, returning a
frozen :class:`SourceOptions` or raising :class:`OptionError` naming the
option, the bad value and what is allowed. It runs on the driver (in
``schema()``, ``reader()`` and ``streamReader()``), so a bad option fails
before any task starts. Kafka's names (``subscribe``, ``subscribePattern``,
``assign``, ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger``) and forms
(``{"t": {"0": 5}}``, the timestamp options) are accepted, so a Kafka
pipeline needs only its format and ``kafka.bootstrap.servers`` -> ``path``
changed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from spark_queue.connector import offset_json
from spark_queue.connector.offset_json import EARLIEST_SENTINEL, LATEST_SENTINEL
from spark_queue.connector.option_table import (
    Given,
    Option,
    OptionTable,
    boolean,
    choice,
    fail,
    non_empty,
    option_duration_ms,
    positive_int,
    store_path,
    timestamp_ms,
    topic_list,
)
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import OptionError

__all__ = [
    "EARLIEST_SENTINEL", "LATEST_SENTINEL", "OPTION_NAMES", "SOURCE_OPTIONS",
    "SOURCE_TABLE", "SourceOptions", "parse_source_options",
]

KEY_VALUE_FORMATS = ("binary", "string")
MODES = ("FAILFAST", "PERMISSIVE")
VALUE_SCHEMAS = ("kafka", "topic")
READ_PATHS = ("auto", "executor", "driver")
LATENCY_MODES = ("auto", "throughput", "low")
STARTING_KEYWORDS = ("earliest", "latest", "committed")
TIMESTAMP_STRATEGIES = ("latest", "error")

SUBSCRIPTIONS = ("topic", "topics", "topicPattern", "assign")
STREAM_ONLY = (
    "maxRowsPerTrigger", "minRowsPerTrigger", "maxTriggerDelay", "latencyMode", "lowLatencyMaxRows",
)
BATCH_ONLY = ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp")


def _one_topic(name: str, raw: str) -> str:
    value = raw.strip()
    if not value or "," in value:
        raise fail(name, raw, "one topic name (use 'topics' for a list)")
    return value


def _pattern(name: str, raw: str) -> str:
    try:
        re.compile(raw)
    except re.error as exc:
        raise fail(name, raw, f"a valid regular expression ({exc})") from None
    if not raw:
        raise fail(name, raw, "a non-empty regular expression")
    return raw


def _starting(name: str, raw: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    value = raw.strip()
    if value.lower() in STARTING_KEYWORDS:
        return value.lower(), ()
    if value.startswith("{"):
        return "json", offset_json.per_topic(name, value, "offset")
    raise fail(
        name, raw,
        'earliest, latest, committed or a JSON object like {"clicks": 42} or {"clicks": {"0": 42}}',
    )


def _ending(name: str, raw: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    value = raw.strip()
    if value.lower() == "latest":
        return "latest", ()
    if value.startswith("{"):
        pairs = offset_json.per_topic(name, value, "offset")
        if any(offset == EARLIEST_SENTINEL for _, offset in pairs):
            raise fail(name, raw, "offsets >= 0 or -1 (latest)")
        return "json", pairs
    raise fail(name, raw, 'latest or a JSON object like {"clicks": 42} or {"clicks": {"0": 42}}')


def _timestamps(name: str, raw: str) -> tuple[tuple[str, int], ...]:
    return offset_json.per_topic(name, raw, "timestamp")


def _column(name: str, raw: str) -> str:
    if not raw.strip():
        raise fail(name, raw, "a non-empty column name")
    return raw.strip()


# The one list of source options (order = documentation order).
SOURCE_OPTIONS: tuple[Option, ...] = (
    Option("path", store_path, doc_default="(required)",
           doc="the store file, a path or a `file:` URI; it must exist (a reader never creates "
           "one)"),
    Option("topic", _one_topic,
           doc="one topic (exactly one of `topic`, `topics`, `topicPattern`, `assign`)"),
    Option("topics", topic_list, aliases=("subscribe",), doc="comma-separated topics"),
    Option("topicPattern", _pattern, aliases=("subscribePattern",),
           doc="regular expression (Python `re`) matched against whole topic names; topics "
           "created while the query runs are read from offset 0"),
    Option("assign", offset_json.assign,
           doc='Kafka\'s JSON `{"topic": [0]}`: read the listed topics (partition 0 only; any '
           "other partition fails naming it)"),
    Option("startingOffsets", _starting, default=("earliest", ()), doc_default="earliest",
           doc="`earliest`, `latest` (streams), `committed` (the `consumer`'s saved offsets), "
           'or JSON `{"topic": n}` or Kafka\'s `{"topic": {"0": n}}` with -2 = earliest, '
           "-1 = latest; only for a new checkpoint"),
    Option("startingOffsetsByTimestamp", _timestamps,
           doc='JSON `{"topic": {"0": ms}}` (or `{"topic": ms}`): start each topic at its first '
           "event stamped at or after that time (-2 = earliest, -1 = latest); overrides "
           "`startingOffsets`"),
    Option("startingTimestamp", timestamp_ms,
           doc="one start time for every topic (ms since the epoch or ISO-8601, UTC if no "
           "zone); overrides both"),
    Option("startingOffsetsByTimestampStrategy", choice(TIMESTAMP_STRATEGIES), default="latest",
           doc_default="latest",
           doc="a topic with no event at or after the start time: `latest` starts after its "
           "last event, `error` fails naming it"),
    Option("endingOffsets", _ending, default=("latest", ()), doc_default="latest",
           doc='batch reads only: `latest` or JSON `{"topic": n}` / `{"topic": {"0": n}}` '
           "(exclusive; -1 = latest)"),
    Option("endingOffsetsByTimestamp", _timestamps,
           doc='batch reads only: JSON `{"topic": {"0": ms}}`: end each topic before its first '
           "event stamped at or after that time (latest if none); overrides `endingOffsets`"),
    Option("endingTimestamp", timestamp_ms,
           doc="batch reads only: one end time for every topic; overrides both"),
    Option("consumer", non_empty,
           doc="save the query's position under this consumer name: its start at once, then "
           "each committed micro-batch's end offsets (they trail the checkpoint by up to one "
           "batch); retention never deletes what a query reading under the name has not "
           "committed ([consumer names](#consumer-names))"),
    Option("maxRowsPerTrigger", positive_int, aliases=("maxOffsetsPerTrigger",),
           doc_default="no limit",
           doc="at most this many rows per micro-batch (streams; respected by `availableNow`)"),
    Option("minRowsPerTrigger", positive_int, aliases=("minOffsetsPerTrigger",),
           doc="streams: wait until this many rows are available, or `maxTriggerDelay` "
           "passed"),
    Option("maxTriggerDelay", option_duration_ms, default=15 * 60_000, doc_default="15m",
           doc="with `minRowsPerTrigger`: the longest wait since the last micro-batch "
           "(`500ms`, `2s`, `15m`, `1h`)"),
    Option("failOnDataLoss", boolean, default=True, doc_default="true",
           doc="fail when retention removed offsets the query needs (message names topic, "
           "requested and earliest offsets), or when the store went back in time under the "
           "checkpoint (a restored copy older than it: message names topic, gap and ways "
           "out); `false` skips ahead with a warning (a store that ends before the "
           "checkpoint: goes on from its end)"),
    Option("includeHeaders", boolean, default=False, doc_default="false",
           doc="add Kafka's `headers` column `array<struct<key:string,value:binary>>`"),
    Option("keyFormat", choice(KEY_VALUE_FORMATS), default="binary", doc_default="binary",
           doc="`binary` (Kafka's) or `string`"),
    Option("valueFormat", choice(KEY_VALUE_FORMATS), default="binary", doc_default="binary",
           doc="`binary` (Kafka's) or `string`"),
    Option("valueSchema", choice(VALUE_SCHEMAS), default="kafka", doc_default="kafka",
           doc="`kafka`: Kafka's columns unless `.schema(...)` names others; `topic`: the "
           "columns the topic declared ([Topic schemas](schemas.md)), each value parsed into "
           "them as `.schema(...)` would; a query's batches end where the schema changes "
           "and it fails naming both versions (`spark_queue.spark.follow_schema` restarts "
           "it in the new columns)"),
    Option("mode", choice(MODES, upper=True), default="FAILFAST", doc_default="FAILFAST",
           doc="user schemas: `FAILFAST` fails on a malformed value naming topic and offset; "
           "`PERMISSIVE` gives nulls"),
    Option("columnNameOfCorruptRecord", _column, default="_corrupt_record",
           doc_default="_corrupt_record",
           doc="PERMISSIVE: the STRING column of the user schema that receives the raw "
           "malformed value"),
    Option("rowsPerPartition", positive_int, doc_default="derived",
           doc="split a range into Spark partitions of at most this many rows; by default "
           "the range is shared among the driver's CPUs, at least 50000 rows a partition"),
    Option("minPartitions", positive_int, default=1, doc_default="1",
           doc="... and into at least this many (when there are that many rows)"),
    Option("readPath", choice(READ_PATHS), default="auto", doc_default="auto",
           doc="`auto`: `executor` under a `local`/`local-cluster` master, `driver` under any "
           "other (a cluster; [running on a cluster](cluster.md)); `executor`: executors open "
           "the file (a task that cannot see the driver's very file fails naming this "
           "option); `driver`: the driver reads each range and ships it in the partitions as "
           "Arrow IPC"),
    Option("latencyMode", choice(LATENCY_MODES), default="auto", doc_default="auto",
           doc="streams only. `auto`: a micro-batch of at most `lowLatencyMaxRows` rows is "
           "read by the driver's planning process and shipped with the plan (no executor "
           "Python worker: the lowest latency), a larger one is read by executor tasks; "
           "`throughput`: executors read every micro-batch; `low`: the driver reads every "
           "micro-batch (every row passes through that one process, so bulk throughput is "
           "far lower; no lag in progress reports)"),
    Option("lowLatencyMaxRows", positive_int, default=10_000, doc_default="10000",
           doc="streams, `latencyMode=auto`: the most rows (and 16 MiB) a micro-batch may hold "
           "to be shipped with the plan"),
)
SOURCE_TABLE = OptionTable("source", SOURCE_OPTIONS)
OPTION_NAMES = SOURCE_TABLE.names()

Offsets = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class SourceOptions:
    """Parsed source options; picklable, holds no connection."""

    path: str
    topics: tuple[str, ...]
    topic_pattern: str | None
    # "earliest" | "latest" | "committed" | "json" | "timestamp" | "timestamps"
    starting: str
    starting_json: Offsets
    starting_timestamp_ms: int | None
    # "latest" | "json" | "timestamp" | "timestamps" (batch only)
    ending: str
    ending_json: Offsets
    consumer: str | None
    max_rows_per_trigger: int | None
    min_rows_per_trigger: int | None
    max_trigger_delay_ms: int
    fail_on_data_loss: bool
    include_headers: bool
    key_format: str
    value_format: str
    mode: str
    corrupt_record_column: str
    rows_per_partition: int | None  # None: derived from the range and the driver's CPUs
    min_partitions: int
    read_path: str
    latency_mode: str = "auto"
    low_latency_max_rows: int = 10_000
    # Kafka's timestamp forms: {topic: ms} with -2 = earliest, -1 = latest.
    starting_timestamps: Offsets = ()
    ending_timestamp_ms: int | None = None
    ending_timestamps: Offsets = ()
    # A start time after a topic's last event: "latest" starts there, "error" fails.
    timestamp_strategy: str = "latest"
    subscription: str = ""  # as the user wrote it, e.g. "subscribe=a,b", for messages
    value_schema: str = "kafka"  # "kafka" | "topic"
    # With valueSchema=topic: (topic, schema version) of each topic when the query was
    # planned; a stream fails once one of them has another version.
    value_schema_versions: Offsets = ()

    def subscribes(self, topic: str) -> bool:
        """Whether ``topic`` is one this source reads."""
        if self.topic_pattern is not None:
            return re.fullmatch(self.topic_pattern, topic) is not None
        return topic in self.topics

    @property
    def starting_offsets(self) -> dict[str, int]:
        return dict(self.starting_json)

    @property
    def ending_offsets(self) -> dict[str, int]:
        return dict(self.ending_json)


@dataclass(frozen=True)
class _Subscription:
    topics: tuple[str, ...]
    pattern: str | None
    describe: str  # e.g. "subscribe=a,b"

    def subscribes(self, topic: object) -> bool:
        if self.pattern is not None:
            return isinstance(topic, str) and re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics


def parse_source_options(options: Mapping[str, str], *, streaming: bool | None) -> SourceOptions:
    """Validate ``options`` for a streaming or a batch read; raise OptionError on the first problem.

    ``streaming=None`` (``schema()``, which cannot tell a stream from a batch
    read) checks everything except which options apply to which kind of read.
    """
    given = SOURCE_TABLE.read(options)
    path = given["path"] if given.is_set("path") else ""
    if not path:
        raise OptionError(
            f"{FORMAT_NAME} option 'path' is required: the store file to read, as "
            f'.option("path", "/data/events.sqlite") or .load("/data/events.sqlite").'
        )
    subscription = _subscription(given)
    _check_read_kind(given, streaming)
    starting, starting_json, starting_ts, starting_tss = _start(given, subscription, streaming)
    ending, ending_json, ending_ts, ending_tss = _end(given, subscription)
    max_rows, min_rows = given["maxRowsPerTrigger"], given["minRowsPerTrigger"]
    if min_rows is not None and max_rows is not None and min_rows > max_rows:
        raise OptionError(
            f"{FORMAT_NAME} option '{given.label('minRowsPerTrigger')}' ({min_rows}) must not "
            "exceed "
            f"'{given.label('maxRowsPerTrigger')}' ({max_rows})."
        )
    return SourceOptions(
        path=path,
        topics=subscription.topics,
        topic_pattern=subscription.pattern,
        starting=starting,
        starting_json=starting_json,
        starting_timestamp_ms=starting_ts,
        ending=ending,
        ending_json=ending_json,
        consumer=given["consumer"],
        max_rows_per_trigger=max_rows,
        min_rows_per_trigger=min_rows,
        max_trigger_delay_ms=given["maxTriggerDelay"],
        fail_on_data_loss=given["failOnDataLoss"],
        include_headers=given["includeHeaders"],
        key_format=given["keyFormat"],
        value_format=given["valueFormat"],
        mode=given["mode"],
        corrupt_record_column=given["columnNameOfCorruptRecord"],
        rows_per_partition=given["rowsPerPartition"],
        min_partitions=given["minPartitions"],
        read_path=given["readPath"],
        latency_mode=given["latencyMode"],
        low_latency_max_rows=given["lowLatencyMaxRows"],
        starting_timestamps=starting_tss,
        ending_timestamp_ms=ending_ts,
        ending_timestamps=ending_tss,
        timestamp_strategy=given["startingOffsetsByTimestampStrategy"],
        subscription=subscription.describe,
        value_schema=given["valueSchema"],
    )


def _subscription(given: Given) -> _Subscription:
    chosen = [name for name in SUBSCRIPTIONS if given.is_set(name)]
    if len(chosen) != 1:
        what = "none was given" if not chosen else "got " + ", ".join(map(given.label, chosen))
        raise OptionError(
            f"{FORMAT_NAME} source needs exactly one of the options 'topic', 'topics' or "
            f"'topicPattern' (Kafka's 'subscribe', 'subscribePattern' or 'assign'); {what}."
        )
    name = chosen[0]
    value = given[name]
    label = given.label(name)
    if name == "topic":
        return _Subscription((value,), None, f"{label}={value}")
    if name == "topicPattern":
        return _Subscription((), value, f"{label}={value}")
    return _Subscription(value, None, f"{label}={','.join(value)}")


def _check_read_kind(given: Given, streaming: bool | None) -> None:
    if streaming is True:
        for name in BATCH_ONLY:
            if given.is_set(name):
                raise OptionError(
                    f"{FORMAT_NAME} option '{given.label(name)}' ({given.raw(name)!r}) applies to "
                    "batch "
                    "reads (spark.read) only; a stream has no end. Remove it, or use "
                    "trigger(availableNow=True)."
                )
    if streaming is False:
        for name in STREAM_ONLY:
            if given.is_set(name):
                raise OptionError(
                    f"{FORMAT_NAME} option '{given.label(name)}' ({given.raw(name)!r}) applies to "
                    "streaming reads only; a batch read takes the whole range. Use "
                    "'endingOffsets' to bound it."
                )


def _check_topics(given: Given, name: str, pairs: Offsets, subscription: _Subscription) -> None:
    for topic, _ in pairs:
        if not subscription.subscribes(topic):
            raise OptionError(
                f"{FORMAT_NAME} option '{given.label(name)}' names topic {topic!r}, which this "
                "source "
                f"does not read ({subscription.describe}); got {given.raw(name)!r}. List only "
                "subscribed topics."
            )


def _start(
    given: Given, subscription: _Subscription, streaming: bool | None
) -> tuple[str, Offsets, int | None, Offsets]:
    """Kafka's precedence: startingTimestamp, startingOffsetsByTimestamp, startingOffsets."""
    if given.is_set("startingTimestamp"):
        return "timestamp", (), given["startingTimestamp"], ()
    if given.is_set("startingOffsetsByTimestamp"):
        pairs = given["startingOffsetsByTimestamp"]
        _check_topics(given, "startingOffsetsByTimestamp", pairs, subscription)
        return "timestamps", (), None, pairs
    kind, pairs = given["startingOffsets"]
    label = given.label("startingOffsets")
    _check_topics(given, "startingOffsets", pairs, subscription)
    if kind == "committed" and given["consumer"] is None:
        raise OptionError(
            f"{FORMAT_NAME} option '{label}' is 'committed', which needs the option "
            "'consumer' naming whose saved offsets to start from."
        )
    if streaming is False and kind == "latest":
        raise fail(
            label, given.raw("startingOffsets"), "earliest, committed or JSON for a batch read"
        )
    if streaming is False and any(offset == LATEST_SENTINEL for _, offset in pairs):
        raise fail(label, given.raw("startingOffsets"), "offsets >= 0 or -2 for a batch read")
    return kind, pairs, None, ()


def _end(given: Given, subscription: _Subscription) -> tuple[str, Offsets, int | None, Offsets]:
    """Kafka's precedence: endingTimestamp, then endingOffsetsByTimestamp, then endingOffsets."""
    if given.is_set("endingTimestamp"):
        return "timestamp", (), given["endingTimestamp"], ()
    if given.is_set("endingOffsetsByTimestamp"):
        pairs = given["endingOffsetsByTimestamp"]
        _check_topics(given, "endingOffsetsByTimestamp", pairs, subscription)
        return "timestamps", (), None, pairs
    kind, pairs = given["endingOffsets"]
    _check_topics(given, "endingOffsets", pairs, subscription)
    return kind, pairs, None, ()

