"""Every option of the ``sqliteq`` source: parsed and validated in one place.

Spark hands options over as strings in a case-insensitive mapping (keys may
arrive lowercased). :func:`parse_source_options` turns them into a frozen
:class:`SourceOptions` or raises :class:`OptionError` with a message that
names the option, the bad value and what is allowed. It runs on the driver
(in ``schema()``, ``reader()`` and ``streamReader()``), so a bad option fails
before any task starts. This module imports only the standard library and
``spark_queue.errors``, so it is unit-tested without Spark.

:data:`SOURCE_OPTIONS` is the one list of option names with their defaults;
the DataSource docstring and the README table are checked against it
(``tests/connector/test_source_options_docs.py``).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from spark_queue.errors import OptionError

FORMAT = "sqliteq"

# startingOffsets / endingOffsets JSON may use Kafka's sentinels for one topic.
EARLIEST_SENTINEL = -2
LATEST_SENTINEL = -1

KEY_VALUE_FORMATS = ("binary", "string")
MODES = ("FAILFAST", "PERMISSIVE")
READ_PATHS = ("auto", "executor", "driver")
LATENCY_MODES = ("throughput", "low")
STARTING_KEYWORDS = ("earliest", "latest", "committed")


@dataclass(frozen=True)
class OptionSpec:
    name: str
    default: str  # as the user would write it; "" = no default
    allowed: str  # a short phrase for messages and docs


# The one list of source options (order = documentation order).
SOURCE_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("path", "", "path of the store file (required)"),
    OptionSpec("topic", "", "one topic name"),
    OptionSpec("topics", "", "comma-separated topic names"),
    OptionSpec("topicPattern", "", "a Python regular expression matched against whole names"),
    OptionSpec(
        "startingOffsets", "earliest", "earliest, latest, committed or JSON {topic: offset}"
    ),
    OptionSpec("startingTimestamp", "", "milliseconds since the epoch or ISO-8601"),
    OptionSpec("endingOffsets", "latest", "latest or JSON {topic: offset} (batch reads only)"),
    OptionSpec("consumer", "", "a consumer name"),
    OptionSpec("maxRowsPerTrigger", "", "a positive integer (streaming only)"),
    OptionSpec("maxOffsetsPerTrigger", "", "alias of maxRowsPerTrigger"),
    OptionSpec("minRowsPerTrigger", "", "a positive integer (streaming only)"),
    OptionSpec("maxTriggerDelay", "15m", "a duration: 500ms, 2s, 15m, 1h (plain number = ms)"),
    OptionSpec("failOnDataLoss", "true", "true or false"),
    OptionSpec("includeHeaders", "false", "true or false"),
    OptionSpec("keyFormat", "binary", "binary or string"),
    OptionSpec("valueFormat", "binary", "binary or string"),
    OptionSpec("mode", "FAILFAST", "FAILFAST or PERMISSIVE (user schemas only)"),
    OptionSpec("columnNameOfCorruptRecord", "_corrupt_record", "a column name of the user schema"),
    OptionSpec("rowsPerPartition", "100000", "a positive integer"),
    OptionSpec("minPartitions", "1", "a positive integer"),
    OptionSpec("readPath", "auto", "auto, executor or driver"),
    OptionSpec("latencyMode", "throughput", "throughput or low (streaming only)"),
)
OPTION_NAMES = tuple(spec.name for spec in SOURCE_OPTIONS)
_BY_LOWER = {spec.name.lower(): spec for spec in SOURCE_OPTIONS}

_STREAM_ONLY = ("maxRowsPerTrigger", "minRowsPerTrigger", "maxTriggerDelay", "latencyMode")
_DURATION = re.compile(r"\s*(\d+)\s*(ms|s|sec|secs|m|min|mins|h|hour|hours|d|day|days)?\s*", re.I)
_UNIT_MS = {
    None: 1, "ms": 1, "s": 1000, "sec": 1000, "secs": 1000, "m": 60_000, "min": 60_000,
    "mins": 60_000, "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}


@dataclass(frozen=True)
class SourceOptions:
    """Parsed source options; picklable, holds no connection."""

    path: str
    topics: tuple[str, ...]
    topic_pattern: str | None
    # "earliest" | "latest" | "committed" | "json" | "timestamp"
    starting: str
    starting_json: tuple[tuple[str, int], ...]
    starting_timestamp_ms: int | None
    # "latest" | "json" (batch only)
    ending: str
    ending_json: tuple[tuple[str, int], ...]
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
    rows_per_partition: int
    min_partitions: int
    read_path: str
    latency_mode: str = "throughput"

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


def _fail(name: str, value: object, allowed: str) -> OptionError:
    return OptionError(f"{FORMAT} option '{name}' must be {allowed}; got {str(value)!r}.")


def _lower_keys(options: Mapping[str, str]) -> dict[str, str]:
    lowered: dict[str, str] = {}
    for key, value in options.items():
        lowered[str(key).lower()] = "" if value is None else str(value)
    return lowered


def _check_unknown(lowered: Mapping[str, str]) -> None:
    unknown = sorted(key for key in lowered if key not in _BY_LOWER)
    if not unknown:
        return
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(key, list(_BY_LOWER), n=1)
        hint = f" (did you mean '{_BY_LOWER[close[0]].name}'?)" if close else ""
        hints.append(f"'{key}'{hint}")
    raise OptionError(
        f"{FORMAT} source does not know option(s) {', '.join(hints)}; "
        f"known options: {', '.join(OPTION_NAMES)}."
    )


def _positive_int(name: str, raw: str) -> int:
    text = raw.strip()
    if not re.fullmatch(r"\+?\d+", text) or int(text) <= 0:
        raise _fail(name, raw, "a positive integer")
    return int(text)


def _boolean(name: str, raw: str) -> bool:
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise _fail(name, raw, "true or false")
    return text == "true"


def _choice(name: str, raw: str, allowed: tuple[str, ...], *, upper: bool = False) -> str:
    text = raw.strip().upper() if upper else raw.strip().lower()
    if text not in allowed:
        raise _fail(name, raw, " or ".join(allowed))
    return text


def parse_duration_ms(name: str, raw: str) -> int:
    """``500ms``, ``2s``, ``15m``, ``1h``, ``1d``; a plain number is milliseconds."""
    match = _DURATION.fullmatch(raw)
    if match is None:
        raise _fail(name, raw, "a duration such as 500ms, 2s, 15m or 1h")
    unit = match.group(2).lower() if match.group(2) else None
    return int(match.group(1)) * _UNIT_MS[unit]


def parse_timestamp_ms(name: str, raw: str) -> int:
    """Milliseconds since the epoch, or ISO-8601 (a time without zone is UTC)."""
    text = raw.strip()
    if re.fullmatch(r"\d+", text):
        return int(text)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _fail(
            name, raw, "milliseconds since the epoch or an ISO-8601 time like 2024-05-01T12:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    millis = int(parsed.timestamp() * 1000)
    if millis < 0:
        raise _fail(name, raw, "a time at or after 1970-01-01T00:00:00Z")
    return millis


def _topic_list(name: str, raw: str) -> tuple[str, ...]:
    names = [part.strip() for part in raw.split(",")]
    if not raw.strip() or any(not part for part in names):
        raise _fail(name, raw, "a comma-separated list of topic names with no empty entries")
    if len(set(names)) != len(names):
        raise _fail(name, raw, "a list of distinct topic names")
    return tuple(names)


def _json_offsets(
    name: str, raw: str, subscribes, describe: str, *, allow_latest_sentinel: bool
) -> tuple[tuple[str, int], ...]:
    allowed = (
        'a JSON object of topic to offset, like {"clicks": 42} '
        f"(-2 = earliest{', -1 = latest' if allow_latest_sentinel else ''})"
    )
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise _fail(name, raw, allowed) from None
    if not isinstance(parsed, dict) or not parsed:
        raise _fail(name, raw, allowed)
    sentinels = (EARLIEST_SENTINEL, LATEST_SENTINEL)
    offsets = []
    for topic, offset in parsed.items():
        if (
            not isinstance(offset, int)
            or isinstance(offset, bool)
            or (offset < 0 and offset not in sentinels)
        ):
            raise _fail(name, raw, allowed)
        if not subscribes(topic):
            raise OptionError(
                f"{FORMAT} option '{name}' names topic {topic!r}, which this source does not "
                f"read ({describe}); got {raw!r}. List only subscribed topics."
            )
        offsets.append((topic, offset))
    return tuple(sorted(offsets))


def parse_source_options(options: Mapping[str, str], *, streaming: bool | None) -> SourceOptions:
    """Validate ``options`` for a streaming or a batch read; raise OptionError on the first problem.

    ``streaming=None`` (``schema()``, which cannot tell a stream from a batch
    read) checks everything except which options apply to which kind of read.
    """
    raw = _lower_keys(options)
    _check_unknown(raw)

    def get(name: str) -> str | None:
        value = raw.get(name.lower())
        return None if value is None else value

    path = (get("path") or "").strip()
    if not path:
        raise OptionError(
            f"{FORMAT} option 'path' is required: the store file to read, as "
            f'.option("path", "/data/events.sqlite") or .load("/data/events.sqlite").'
        )

    given = [n for n in ("topic", "topics", "topicPattern") if get(n) is not None]
    if len(given) != 1:
        what = "none was given" if not given else f"got {', '.join(given)}"
        raise OptionError(
            f"{FORMAT} source needs exactly one of the options 'topic', 'topics' or "
            f"'topicPattern'; {what}."
        )
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    if given[0] == "topic":
        value = get("topic").strip()
        if not value or "," in value:
            raise _fail("topic", get("topic"), "one topic name (use 'topics' for a list)")
        topics = (value,)
        describe = f"topic={value}"
    elif given[0] == "topics":
        topics = _topic_list("topics", get("topics"))
        describe = f"topics={','.join(topics)}"
    else:
        pattern = get("topicPattern")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise _fail("topicPattern", pattern, f"a valid regular expression ({exc})") from None
        if not pattern:
            raise _fail("topicPattern", pattern, "a non-empty regular expression")
        describe = f"topicPattern={pattern}"

    def subscribes(topic: str) -> bool:
        if pattern is not None:
            return isinstance(topic, str) and re.fullmatch(pattern, topic) is not None
        return topic in topics

    consumer = get("consumer")
    if consumer is not None:
        consumer = consumer.strip()
        if not consumer:
            raise _fail("consumer", get("consumer"), "a non-empty consumer name")

    starting_raw = get("startingOffsets")
    timestamp_raw = get("startingTimestamp")
    if starting_raw is not None and timestamp_raw is not None:
        raise OptionError(
            f"{FORMAT} options 'startingOffsets' ({starting_raw!r}) and 'startingTimestamp' "
            f"({timestamp_raw!r}) both choose where to start; give only one."
        )
    starting, starting_json, starting_ts = "earliest", (), None
    if timestamp_raw is not None:
        starting, starting_ts = "timestamp", parse_timestamp_ms("startingTimestamp", timestamp_raw)
    elif starting_raw is not None:
        text = starting_raw.strip()
        if text.lower() in STARTING_KEYWORDS:
            starting = text.lower()
        elif text.startswith("{"):
            starting = "json"
            starting_json = _json_offsets(
                "startingOffsets", text, subscribes, describe, allow_latest_sentinel=True
            )
        else:
            raise _fail(
                "startingOffsets", starting_raw,
                'earliest, latest, committed or a JSON object like {"clicks": 42}',
            )
        if starting == "committed" and consumer is None:
            raise OptionError(
                f"{FORMAT} option 'startingOffsets' is 'committed', which needs the option "
                "'consumer' naming whose saved offsets to start from."
            )
        if starting == "latest" and streaming is False:
            raise _fail(
                "startingOffsets", starting_raw, "earliest, committed or JSON for a batch read"
            )
        if streaming is False and any(off == LATEST_SENTINEL for _, off in starting_json):
            raise _fail("startingOffsets", starting_raw, "offsets >= 0 or -2 for a batch read")

    ending, ending_json = "latest", ()
    ending_raw = get("endingOffsets")
    if ending_raw is not None:
        if streaming is True:
            raise OptionError(
                f"{FORMAT} option 'endingOffsets' ({ending_raw!r}) applies to batch reads "
                "(spark.read) only; a stream has no end. Remove it, or use "
                "trigger(availableNow=True)."
            )
        text = ending_raw.strip()
        if text.lower() == "latest":
            ending = "latest"
        elif text.startswith("{"):
            ending = "json"
            ending_json = _json_offsets(
                "endingOffsets", text, subscribes, describe, allow_latest_sentinel=True
            )
            if any(off == EARLIEST_SENTINEL for _, off in ending_json):
                raise _fail("endingOffsets", ending_raw, "offsets >= 0 or -1 (latest)")
        else:
            raise _fail("endingOffsets", ending_raw, 'latest or a JSON object like {"clicks": 42}')

    if streaming is False:
        for name in _STREAM_ONLY + ("maxOffsetsPerTrigger",):
            if get(name) is not None:
                raise OptionError(
                    f"{FORMAT} option '{name}' ({get(name)!r}) applies to streaming reads only; "
                    "a batch read takes the whole range. Use 'endingOffsets' to bound it."
                )

    max_rows = None
    max_raw, alias_raw = get("maxRowsPerTrigger"), get("maxOffsetsPerTrigger")
    if max_raw is not None and alias_raw is not None:
        raise OptionError(
            f"{FORMAT} options 'maxRowsPerTrigger' ({max_raw!r}) and its alias "
            f"'maxOffsetsPerTrigger' ({alias_raw!r}) are both set; give only one."
        )
    if max_raw is not None:
        max_rows = _positive_int("maxRowsPerTrigger", max_raw)
    elif alias_raw is not None:
        max_rows = _positive_int("maxOffsetsPerTrigger", alias_raw)
    min_rows = None
    if get("minRowsPerTrigger") is not None:
        min_rows = _positive_int("minRowsPerTrigger", get("minRowsPerTrigger"))
    if min_rows is not None and max_rows is not None and min_rows > max_rows:
        raise OptionError(
            f"{FORMAT} option 'minRowsPerTrigger' ({min_rows}) must not exceed "
            f"'maxRowsPerTrigger' ({max_rows})."
        )
    delay_raw = get("maxTriggerDelay")
    delay_ms = parse_duration_ms("maxTriggerDelay", "15m" if delay_raw is None else delay_raw)

    def flag(name: str, default: bool) -> bool:
        value = get(name)
        return default if value is None else _boolean(name, value)

    def choice(name: str, default: str, allowed: tuple[str, ...], upper: bool = False) -> str:
        value = get(name)
        return default if value is None else _choice(name, value, allowed, upper=upper)

    corrupt = get("columnNameOfCorruptRecord")
    if corrupt is not None and not corrupt.strip():
        raise _fail("columnNameOfCorruptRecord", corrupt, "a non-empty column name")

    def positive(name: str, default: int) -> int:
        value = get(name)
        return default if value is None else _positive_int(name, value)

    return SourceOptions(
        path=path,
        topics=topics,
        topic_pattern=pattern,
        starting=starting,
        starting_json=starting_json,
        starting_timestamp_ms=starting_ts,
        ending=ending,
        ending_json=ending_json,
        consumer=consumer,
        max_rows_per_trigger=max_rows,
        min_rows_per_trigger=min_rows,
        max_trigger_delay_ms=delay_ms,
        fail_on_data_loss=flag("failOnDataLoss", True),
        include_headers=flag("includeHeaders", False),
        key_format=choice("keyFormat", "binary", KEY_VALUE_FORMATS),
        value_format=choice("valueFormat", "binary", KEY_VALUE_FORMATS),
        mode=choice("mode", "FAILFAST", MODES, upper=True),
        corrupt_record_column="_corrupt_record" if corrupt is None else corrupt.strip(),
        rows_per_partition=positive("rowsPerPartition", 100_000),
        min_partitions=positive("minPartitions", 1),
        read_path=choice("readPath", "auto", READ_PATHS),
        latency_mode=choice("latencyMode", "throughput", LATENCY_MODES),
    )
