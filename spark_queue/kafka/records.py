"""One event in both shapes: a store row (``Store.read_arrow``) and a Kafka record.

An event's *content* is what both logs hold alike: the key and the value as
bytes (the store's stored bytes: JSON as its compact text, text as UTF-8), the
headers as a map of text, the timestamp in ms (Kafka's CreateTime). Exports,
their checks and imports compare and checksum contents, never Python values.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from spark_queue.errors import KafkaError, PayloadError
from spark_queue.store import JSON, TEXT, Encoded

VALUE_FORMATS = ("auto", "json", "text", "bytes")


class Content(NamedTuple):
    """What an event is, the same in a store and in Kafka."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, str], ...]  # sorted; no headers and {} are alike
    timestamp_ms: int


def from_store_row(row: dict[str, Any]) -> Content:
    """A row of ``Store.read_arrow(..., payload_format="binary")`` (as a dict)."""
    headers = json.loads(row["headers"]) if row["headers"] else {}
    return Content(row["key"], row["value"], tuple(sorted(headers.items())), row["timestamp_ms"])


def from_message(msg: Any) -> Content:
    """A Kafka message as content; its headers must be a map of text (see :func:`text_headers`)."""
    headers = text_headers(
        msg.headers(), f"{msg.topic()!r} [{msg.partition()}] offset {msg.offset()}"
    )
    return Content(
        msg.key(), msg.value(), tuple(sorted((headers or {}).items())), msg.timestamp()[1]
    )


def kafka_headers(content: Content) -> list[tuple[str, bytes]] | None:
    return [(name, value.encode()) for name, value in content.headers] or None


def text_headers(
    headers: Sequence[tuple[str, bytes | None]] | None, where: str
) -> dict[str, str] | None:
    """Kafka's headers (a list, names may repeat, values are bytes or null) as the store's
    map of text; a repeated name, a null or a non-UTF-8 value fails naming the record."""
    if not headers:
        return None
    found: dict[str, str] = {}
    for name, value in headers:
        if name in found:
            raise KafkaError(
                f"Kafka record {where} has header {name!r} twice; store headers are a map "
                "(one value per name), so it cannot be imported as it is."
            )
        if value is None:
            raise KafkaError(
                f"Kafka record {where} has header {name!r} with a null value; store header "
                "values are text."
            )
        try:
            found[name] = value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise KafkaError(
                f"Kafka record {where} has header {name!r} whose value is not UTF-8 text "
                f"({exc.reason} at byte {exc.start}); store header values are text."
            ) from exc
    return found


def stored_value(value: bytes | None, value_format: str, where: str) -> Any:
    """A Kafka value as the store keeps it, the bytes unchanged: ``auto`` stores standard
    JSON as JSON, other UTF-8 as text and the rest as bytes (what ``sqliteq publish``'s
    auto does with text); ``json``/``text`` require it; ``bytes`` keeps bytes."""
    if value is None:
        return None
    if value_format == "bytes":
        return value
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        if value_format == "auto":
            return value
        raise PayloadError(
            f"Kafka record {where}: value_format {value_format!r} needs UTF-8 text; the value "
            f"is not ({exc.reason} at byte {exc.start}). Use value_format 'auto' or 'bytes'."
        ) from exc
    if value_format == "text":
        return Encoded(text, TEXT)
    if _is_json(text):
        return Encoded(text, JSON)
    if value_format == "json":
        raise PayloadError(
            f"Kafka record {where}: value_format 'json' needs standard JSON; the value is not. "
            "Use value_format 'auto', 'text' or 'bytes'."
        )
    return Encoded(text, TEXT)


def stored_key(key: bytes | None) -> str | bytes | None:
    """A Kafka key as the store keeps it: UTF-8 text as text, other bytes as bytes."""
    if key is None:
        return None
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return key


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def _is_json(text: str) -> bool:
    try:
        json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return False
    return True


def checksum(contents: Iterable[Content]) -> str:
    """SHA-256 over the contents in order (lengths framed, so no two sequences collide)."""
    digest = hashlib.sha256()
    for content in contents:
        for part in (content.key, content.value):
            digest.update(b"-" if part is None else b"%d:" % len(part) + part)
        digest.update(json.dumps(content.headers).encode() + b"%d;" % content.timestamp_ms)
    return digest.hexdigest()

