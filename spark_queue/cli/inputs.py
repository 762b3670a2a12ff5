"""What the CLI reads from the user: VALUE arguments and NDJSON input, for publish and enqueue."""

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
    "how to store VALUE: auto (default) stores it as JSON when it parses as JSON "
    "('{\"img\": 7}', 42, true) and as text otherwise; json requires JSON; text stores it "
    "as given ('42' stays a string)"
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
    """The NDJSON source as bytes (stdin too), so a line that is not UTF-8 can be named."""
    if name == "-":
        return contextlib.nullcontext(getattr(sys.stdin, "buffer", sys.stdin))
    try:
        return open(name, "rb")
    except OSError as exc:
        raise OptionError(f"cannot read --ndjson file {name!r}: {exc.strerror}.") from exc


def ndjson_values(stream: Iterable[bytes | str], name: str) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line; bad UTF-8 or JSON names its line."""
    source = "stdin" if name == "-" else repr(name)
    for number, line in enumerate(stream, start=1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise OptionError(
                    f"--ndjson {source} line {number} is not UTF-8 ({exc.reason} at byte "
                    f"{exc.start}); NDJSON is UTF-8 text."
                ) from exc
        if not line.strip():
            continue
        try:
            yield number, strict_json(line)
        except ValueError as exc:
            raise OptionError(
                f"--ndjson {source} line {number} is not valid JSON: {exc}."
            ) from exc


def batches(
    numbered: Iterator[tuple[int, Any]], size: int
) -> Iterator[tuple[list[Any], int]]:
    """Values in lists of ``size``, each with the number of its last line."""
    batch: list[Any] = []
    number = 0
    for number, value in numbered:
        batch.append(value)
        if len(batch) >= size:
            yield batch, number
            batch = []
    if batch:
        yield batch, number


def write_ndjson(
    args: Any,
    command: str,
    verb: str,
    write_batch: Callable[[list[Any]], None],
    committed: Callable[[], str],
) -> None:
    """Read ``args.ndjson`` in batches of ``args.batch_size``, each written by ``write_batch``
    in its own transaction, with progress on a terminal.

    When a line or a write fails after earlier batches committed, those stay:
    the error (or, for Ctrl-C, a line on stderr) says which lines they were,
    ``committed()`` what they stored, and the line to resume from, since rerunning
    the whole file would store them twice.
    """
    lines_done = written = 0
    progress = NdjsonProgress(watching(args.json), command, verb)
    with open_input(args.ndjson) as stream:
        try:
            for batch, last_line in batches(ndjson_values(stream, args.ndjson), args.batch_size):
                write_batch(batch)
                lines_done, written = last_line, written + len(batch)
                progress.update(written)
        except (Exception, KeyboardInterrupt) as exc:
            progress.finish()
            if not written:
                raise
            note = _resume_note(args.ndjson, lines_done, committed())
            if not isinstance(exc, Exception):
                print(f"sqliteq {command}: interrupted. {note}", file=sys.stderr)
                raise
            cls = type(exc) if isinstance(exc, SparkQueueError) else OptionError
            raise cls(f"{str(exc).rstrip('.')}. {note}") from exc
    progress.finish()


def _resume_note(name: str, lines_done: int, committed: str) -> str:
    source = "stdin" if name == "-" else name
    return (
        f"Lines 1-{lines_done} of {source} were already committed ({committed}) and stay; "
        f"nothing after line {lines_done} was stored. Resume from line {lines_done + 1} "
        f"(e.g. `tail -n +{lines_done + 1} FILE | ... --ndjson -`), not from the start, or "
        "those lines are stored twice."
    )
