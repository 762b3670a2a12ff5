"""One table-driven option parser for the ``sqliteq`` source and sink.

Each side declares its options once, as :class:`Option` rows (name, Kafka
aliases, typed default, parse function, docs default and doc line).
:meth:`OptionTable.read` turns Spark's case-insensitive string map into typed
values: unknown names fail with the closest known name as a hint; Kafka
client options that mean nothing for a SQLite file are accepted and ignored
with one logged warning naming them; an option given under two of its names
fails. Checks that involve several options stay with each side.

Imports no pyspark (only :mod:`spark_queue.errors`, :mod:`spark_queue.times`, and
:mod:`spark_queue.store` when a name is checked), so both sides are unit-tested without Spark. The
option tables of docs/reading.md and docs/writing.md and the DataSource
docstring are checked against these tables
(``tests/connector/test_options_docs.py``).
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import InvalidNameError, OptionError
from spark_queue.times import parse_duration_ms, parse_time_ms

log = logging.getLogger("spark_queue.connector")

#: Kafka client settings (``kafka.bootstrap.servers``, ``kafka.group.id``,
#: consumer polling and offset-fetch retries, the group id prefix): they
#: configure a connection to brokers, and there are none here.
KAFKA_CLIENT_PREFIXES = ("kafka.", "kafkaconsumer.", "fetchoffset.")
KAFKA_CLIENT_NAMES = ("groupIdPrefix",)

Parse = Callable[[str, str], Any]  # (the name the user wrote, raw text) -> value


@dataclass(frozen=True)
class Option:
    """One option: how it is spelled, parsed and documented."""

    name: str
    parse: Parse
    default: Any = None  # typed; None = not set
    doc_default: str = ""  # the docs table's default column, as a user writes it
    doc: str = ""  # one line: what values mean
    aliases: tuple[str, ...] = ()  # Kafka's names for the same option

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


class Given:
    """Typed values of one read of the options; unset options hold their default."""

    def __init__(self, values: dict[str, Any], given: dict[str, tuple[str, str]]) -> None:
        self._values = values
        self._given = given  # option name -> (the name the user wrote, raw text)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def is_set(self, name: str) -> bool:
        return name in self._given

    def label(self, name: str) -> str:
        """The name the user wrote for option ``name`` (an alias, or the name itself)."""
        return self._given[name][0] if name in self._given else name

    def raw(self, name: str) -> str | None:
        """The text the user gave for option ``name``; None if unset."""
        return self._given[name][1] if name in self._given else None


@dataclass(frozen=True)
class OptionTable:
    """The options of one side; :meth:`read` is the one place their names are checked."""

    side: str  # "source" or "sink", for messages
    options: tuple[Option, ...]
    ignored_names: tuple[str, ...] = ()  # Kafka options that mean nothing on this side
    spark_names: tuple[str, ...] = ()  # Spark's own options, passed to every sink silently

    def names(self) -> tuple[str, ...]:
        """Every accepted name (aliases follow their option), in documentation order."""
        return tuple(n for option in self.options for n in option.names)

    def read(self, options: Mapping[str, str]) -> Given:
        by_lower = {n.lower(): (n, o) for o in self.options for n in o.names}
        ignored_lower = {n.lower() for n in (*KAFKA_CLIENT_NAMES, *self.ignored_names)}
        spark_lower = {n.lower() for n in self.spark_names}
        raw: dict[str, tuple[str, str]] = {}  # option name -> (label, text)
        unknown, ignored = [], []
        for key, value in options.items():
            lowered = str(key).lower()
            given = "" if value is None else str(value)
            if lowered in by_lower:
                label, option = by_lower[lowered]
                if option.name in raw:
                    first = raw[option.name]
                    raise OptionError(
                        f"{FORMAT_NAME} options '{first[0]}' ({first[1]!r}) and '{label}' "
                        f"({given!r}) are both set and name the same option; give only one."
                    )
                raw[option.name] = (label, given)
            elif lowered in spark_lower:
                continue
            elif lowered in ignored_lower or lowered.startswith(KAFKA_CLIENT_PREFIXES):
                ignored.append(str(key))
            else:
                unknown.append(lowered)
        if unknown:
            raise self._unknown(sorted(unknown), by_lower)
        if ignored:
            _warn_ignored(self.side, ignored)
        values = {o.name: o.default for o in self.options}
        for name, (label, given) in raw.items():
            values[name] = self._option(name).parse(label, given)
        return Given(values, raw)

    def _option(self, name: str) -> Option:
        return next(o for o in self.options if o.name == name)

    def _unknown(self, unknown: list[str], by_lower: dict[str, tuple[str, Option]]) -> OptionError:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, list(by_lower), n=1)
            hint = f" (did you mean '{by_lower[close[0]][0]}'?)" if close else ""
            hints.append(f"'{key}'{hint}")
        return OptionError(
            f"{FORMAT_NAME} {self.side} does not know option(s) {', '.join(hints)}; "
            f"known options: {', '.join(self.names())}."
        )


ignored_warnings_logged: set[tuple[str, tuple[str, ...]]] = set()


def _warn_ignored(side: str, names: list[str]) -> None:
    # Spark asks for the options several times per query (schema, reader,
    # each micro-batch's writer): warn once per process for one set of names.
    key = (side, tuple(sorted(names)))
    if key in ignored_warnings_logged:
        return
    ignored_warnings_logged.add(key)
    log.warning(
        "%s %s ignores the Kafka-only option(s) %s: they set up Kafka's clients (or Kafka's "
        "own sink) and mean nothing for the SQLite file named by 'path'.",
        FORMAT_NAME, side, ", ".join(repr(n) for n in sorted(names)),
    )


# -- messages and parse functions --------------------------------------------

def fail(name: str, value: object, allowed: str) -> OptionError:
    return OptionError(f"{FORMAT_NAME} option '{name}' must be {allowed}; got {str(value)!r}.")


def text(name: str, raw: str) -> str:
    return raw


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")


def store_path(name: str, raw: str) -> str:
    """The store file on this machine: a path, or a ``file:`` URI of one (``file:/data/a.sqlite``,
    ``file:///data/a.sqlite``), the form Spark needs for what stays on the driver's disk where
    the default file system is another (DBFS on Databricks). Other schemes (``dbfs:``,
    ``s3:``) name storage SQLite cannot keep a live file on."""
    path = raw.strip()
    scheme = _SCHEME.match(path)
    if scheme is None:
        return path
    if scheme.group(1).lower() != "file":
        raise OptionError(
            f"{FORMAT_NAME} option '{name}' names {raw!r}, a {scheme.group(1)}: URI; the store "
            "is a file on the driver's local disk (SQLite cannot keep a live file on object "
            "or network storage). Give a local path or a file: URI (file:/local_disk0/app.sqlite)"
            "; a file name with a colon before any slash is read as a URI: write it as ./NAME."
        )
    local = path[scheme.end():]
    for authority in ("//localhost/", "///"):
        if local.startswith(authority):
            local = local[len(authority) - 1:]
            break
    if not local.startswith("/") or local.startswith("//"):
        raise OptionError(
            f"{FORMAT_NAME} option '{name}' names {raw!r}, a file: URI without an absolute path "
            "on this machine; write file:/absolute/path (or file:///absolute/path)."
        )
    return local


def non_empty(name: str, raw: str) -> str:
    if not raw.strip():
        raise fail(name, raw, "a non-empty value")
    return raw.strip()


def positive_int(name: str, raw: str) -> int:
    stripped = raw.strip()
    if not re.fullmatch(r"\+?\d+", stripped) or int(stripped) <= 0:
        raise fail(name, raw, "a positive integer")
    return int(stripped)


def non_negative_int(name: str, raw: str) -> int:
    stripped = raw.strip()
    if not re.fullmatch(r"\+?\d+", stripped):
        raise OptionError(
            f"{FORMAT_NAME} option '{name}' must be an integer >= 0; got {raw!r}."
        )
    return int(stripped)


def boolean(name: str, raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered not in ("true", "false"):
        raise fail(name, raw, "true or false")
    return lowered == "true"


def choice(allowed: tuple[str, ...], *, upper: bool = False, phrase: str | None = None) -> Parse:
    """A parse function accepting one of ``allowed`` (case-insensitive)."""

    def parse(name: str, raw: str) -> str:
        value = raw.strip().upper() if upper else raw.strip().lower()
        if value not in allowed:
            raise fail(name, raw, phrase or " or ".join(allowed))
        return value

    return parse


def name_rule(kind: str) -> Parse:
    """A parse function for a topic, queue, consumer or sink name (the store's naming rule)."""

    def parse(name: str, raw: str) -> str:
        # The store is imported when a name is checked, not with the options: the
        # source's planning processes need no store to validate their options.
        from spark_queue.store import MAX_NAME_LENGTH, validate_name

        try:
            return validate_name(raw, kind)
        except InvalidNameError as exc:
            raise fail(
                name, raw,
                f"1 to {MAX_NAME_LENGTH} characters from letters, digits, '_', '.' and '-'",
            ) from exc

    return parse


def option_duration_ms(name: str, raw: str) -> int:
    """``500ms``, ``2s``, ``15m``, ``1h``, ``1d``; a plain number is milliseconds."""
    millis = parse_duration_ms(raw)
    if millis is None:
        raise fail(name, raw, "a duration such as 500ms, 2s, 15m or 1h")
    return millis


def timestamp_ms(name: str, raw: str) -> int:
    """Milliseconds since the epoch, or ISO-8601 (a time without zone is UTC)."""
    millis = parse_time_ms(raw)
    if millis is None:
        raise fail(
            name, raw,
            "milliseconds since the epoch or an ISO-8601 time like 2024-05-01T12:00:00Z "
            "at or after 1970-01-01T00:00:00Z",
        )
    return millis


def topic_list(name: str, raw: str) -> tuple[str, ...]:
    names = [part.strip() for part in raw.split(",")]
    if not raw.strip() or any(not part for part in names):
        raise fail(name, raw, "a comma-separated list of topic names with no empty entries")
    if len(set(names)) != len(names):
        raise fail(name, raw, "a list of distinct topic names")
    return tuple(names)
