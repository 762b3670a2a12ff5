"""What the CLI reads from the user: VALUE arguments and lines (a file with --ndjson, or stdin),
for publish and enqueue."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from spark_queue.cli.progress import NdjsonProgress, watching
from spark_queue.errors import OptionError, SparkQueueError

VALUE_FORMATS = ("auto", "json", "text")
VALUE_FORMAT_HELP = (
    "how to store VALUE (or each line): auto (the default for VALUE and stdin) stores it as "
    "JSON when it parses as standard JSON ('{\"img\": 7}', 42, true) and as text otherwise; "
    "json (the default with --ndjson) requires JSON; text stores it as given ('42' stays a "
    "string)"
)


def _no_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity; standard JSON (and the store) has no such values.
    raise ValueError(f"{name} is not standard JSON")


def strict_json(text: str) -> Any:
    """``json.loads`` for standard JSON only: ``NaN``, ``Infinity`` and ``-Infinity`` are refused
    with ``ValueError`` (``JSONDecodeError`` is one)."""
    return json.loads(text, parse_constant=_no_constant)


def parse_value(text: str, value_format: str) -> Any:
    """VALUE as stored: ``auto`` stores standard JSON as JSON and any other text as text."""
    if value_format == "text":
        return text
    try:
        return strict_json(text)
    except ValueError as exc:
        if value_format == "auto":
            return text
        raise OptionError(
            f"VALUE is not valid JSON ({exc}); got {text!r}. Drop --value-format json to "
            "store it as text."
        ) from exc


def open_input(name: str) -> contextlib.AbstractContextManager[IO[Any]]:
    """The lines' source as bytes (stdin too), so a line that is not UTF-8 can be named."""
    if name == "-":
        return contextlib.nullcontext(getattr(sys.stdin, "buffer", sys.stdin))
    try:
        return open(name, "rb")
    except OSError as exc:
        raise OptionError(f"cannot read --ndjson file {name!r}: {exc.strerror}.") from exc


class Lines:
    """Where lines come from and how each becomes a value: ``--ndjson FILE`` (``-``: stdin),
    or stdin when no VALUE is given. ``label`` names the source in errors."""

    def __init__(self, name: str, label: str, value_format: str,
                 key_separator: str | None = None) -> None:
        self.name = name
        self.label = label
        self.value_format = value_format
        self.key_separator = key_separator

    @property
    def source(self) -> str:
        return "stdin" if self.name == "-" else self.name

    def items(self, stream: Iterable[bytes | str]) -> Iterator[tuple[int, str | None, Any]]:
        """``(line number, key, value)`` for each non-blank line; the key is None without a
        key separator. Bad UTF-8, bad JSON or a missing separator names its line."""
        for number, line in enumerate(stream, start=1):
            if isinstance(line, bytes):
                try:
                    line = line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise OptionError(
                        f"{self.label} line {number} is not UTF-8 ({exc.reason} at byte "
                        f"{exc.start}); lines are UTF-8 text."
                    ) from exc
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            key = None
            if self.key_separator is not None:
                key, found, line = line.partition(self.key_separator)
                if not found:
                    raise OptionError(
                        f"{self.label} line {number} has no key separator "
                        f"{self.key_separator!r}; with --key-separator each line is "
                        f"KEY{self.key_separator}VALUE."
                    )
            yield number, key, self._value(line, number)

    def _value(self, text: str, number: int) -> Any:
        if self.value_format == "text":
            return text
        try:
            return strict_json(text)
        except ValueError as exc:
            if self.value_format == "auto":
                return text
            raise OptionError(f"{self.label} line {number} is not valid JSON: {exc}.") from exc


def batches(
    numbered: Iterator[tuple[int, str | None, Any]], size: int
) -> Iterator[tuple[list[tuple[str | None, Any]], int]]:
    """``(key, value)`` pairs in lists of ``size``, each with the number of its last line."""
    batch: list[tuple[str | None, Any]] = []
    number = 0
    for number, key, value in numbered:
        batch.append((key, value))
        if len(batch) >= size:
            yield batch, number
            batch = []
    if batch:
        yield batch, number


def write_lines(
    lines: Lines,
    *,
    batch_size: int,
    as_json: bool,
    command: str,
    verb: str,
    write_batch: Callable[[list[tuple[str | None, Any]]], None],
    committed: Callable[[], str],
) -> None:
    """Read ``lines`` in batches of ``batch_size``, each written by ``write_batch`` in its own
    transaction, with progress on a terminal.

    When a line or a write fails after earlier batches committed, those stay:
    the error (or, for Ctrl-C, a line on stderr) says which lines they were,
    ``committed()`` what they stored, and the line to resume from, since rerunning
    the whole file would store them twice.
    """
    lines_done = written = 0
    progress = NdjsonProgress(watching(as_json), command, verb)
    if lines.name == "-" and sys.stdin.isatty() and not as_json:
        print(f"sqliteq {command}: reading lines from stdin (Ctrl-D to end)", file=sys.stderr)
    with open_input(lines.name) as stream:
        try:
            for batch, last_line in batches(lines.items(stream), batch_size):
                write_batch(batch)
                lines_done, written = last_line, written + len(batch)
                progress.update(written)
        except (Exception, KeyboardInterrupt) as exc:
            progress.finish()
            if not written:
                raise
            note = _resume_note(lines.source, lines_done, committed())
            if not isinstance(exc, Exception):
                print(f"sqliteq {command}: interrupted. {note}", file=sys.stderr)
                raise
            cls = type(exc) if isinstance(exc, SparkQueueError) else OptionError
            raise cls(f"{str(exc).rstrip('.')}. {note}") from exc
    progress.finish()


def _resume_note(source: str, lines_done: int, committed: str) -> str:
    return (
        f"Lines 1-{lines_done} of {source} were already committed ({committed}) and stay; "
        f"nothing after line {lines_done} was stored. Resume from line {lines_done + 1} "
        f"(e.g. `tail -n +{lines_done + 1} FILE | ... --ndjson -`), not from the start, or "
        "those lines are stored twice."
    )


def choose_input(
    command: str,
    *,
    value: str | None,
    ndjson: str | None,
    value_format: str | None,
    key_separator: str | None = None,
    batch_size: int | None = None,
) -> Lines | None:
    """The lines to read (``--ndjson FILE``, or stdin when no VALUE is given), or None for one
    VALUE. A flag that only means something for lines is refused with a VALUE, never ignored.
    VALUE ``-`` means stdin, as everywhere a value or file is read (never the text ``-``)."""
    if value == "-":
        value = None
    if value is not None and ndjson is not None:
        raise OptionError(f"{command} takes a VALUE or --ndjson FILE, not both.")
    if value is not None:
        for flag, given in (("--batch-size", batch_size), ("--key-separator", key_separator)):
            if given is not None:
                raise OptionError(
                    f"{flag} applies to lines (--ndjson FILE, or stdin when no VALUE is "
                    "given); it cannot go with a VALUE."
                )
        return None
    if ndjson is None:
        return Lines("-", "stdin", value_format or "auto", key_separator)
    label = "--ndjson " + ("stdin" if ndjson == "-" else repr(ndjson))
    return Lines(ndjson, label, value_format or "json", key_separator)
