"""What the CLI reads from the user: VALUE arguments and NDJSON input, for publish and enqueue."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from spark_queue.errors import OptionError


def parse_value(text: str, value_format: str) -> Any:
    if value_format == "text":
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(f"VALUE is not valid JSON ({exc}); got {text!r}.") from exc


def open_input(name: str) -> contextlib.AbstractContextManager[TextIO]:
    if name == "-":
        return contextlib.nullcontext(sys.stdin)
    try:
        return open(name, encoding="utf-8")
    except OSError as exc:
        raise OptionError(f"cannot read --ndjson file {name!r}: {exc.strerror}.") from exc


def ndjson_values(stream: TextIO, name: str) -> Iterator[Any]:
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as exc:
            raise OptionError(f"{name} line {number} is not valid JSON: {exc}.") from exc


def batches(values: Iterator[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for value in values:
        batch.append(value)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
