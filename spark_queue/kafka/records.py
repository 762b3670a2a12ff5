"""One event in both shapes: a store row (``Store.read_arrow``) and a Kafka record.

An event's *content* is what both logs hold alike: the key and the value as
bytes (the store's stored bytes: JSON as its compact text, text as UTF-8), the
headers as a map of text, the timestamp in ms (Kafka's CreateTime). Exports,
their checks and imports compare and checksum contents, never Python values.

Types travel in one reserved header, :data:`TYPES_HEADER`, and only where they
must. Kafka holds bytes; an import infers a value's type from them (standard
JSON as JSON, other UTF-8 as text, the rest as bytes) and a key's (UTF-8 as
text, the rest as bytes). An export adds ``sqliteq.types`` to the records whose
stored type that inference would get wrong, naming only those fields
(``value=text`` for the text ``"42"``, ``key=bytes`` for the bytes ``b"abc"``,
``key=bytes,value=bytes`` for both), and an import applies it and removes it.
Most records (JSON values, text that is not JSON, bytes that are not UTF-8,
text keys) carry no extra header, so Kafka's consumers see the events as they
were published. A store event whose own headers use that name cannot be
exported (PayloadError naming it): the name is reserved. So is
:data:`TIMESTAMP_HEADER`, on the events stamped 0 ms only (see there).

A topic with a schema (docs/schemas.md) carries it into Kafka in two more reserved headers,
so a Kafka side can register it: every event checked against a version names it in
:data:`SCHEMA_HEADER`, and the first event of each version (the one at its ``from_offset``)
holds the version as a JSON Schema document in :data:`JSON_SCHEMA_HEADER`. Both follow from
the event's offset and the topic's versions, which later versions never change (a version
applies from the topic's next offset when it is set), so a rerun or a check computes the
same records. An import removes them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from spark_queue.errors import KafkaError, PayloadError
from spark_queue.store import BYTES, JSON, TEXT, Encoded

if TYPE_CHECKING:
    from spark_queue.store import TopicSchema

KAFKA_VALUE_FORMATS = ("auto", "json", "text", "bytes")  # how an import stores values

TYPES_HEADER = "sqliteq.types"  # reserved: the stored types an import would infer wrongly
# Reserved too: the store's timestamp where Kafka's client cannot send it as CreateTime
# (0 ms, which librdkafka reads as "now"; the store allows any stamp from 0).
TIMESTAMP_HEADER = "sqliteq.timestamp"
# Reserved too: the schema version an event was checked against, and on the first event of
# each version that version as a JSON Schema document (see the module's docstring).
SCHEMA_HEADER = "sqliteq.schema"
JSON_SCHEMA_HEADER = "sqliteq.json-schema"
SCHEMA_HEADERS = (SCHEMA_HEADER, JSON_SCHEMA_HEADER)
RESERVED_HEADERS = (TYPES_HEADER, TIMESTAMP_HEADER, *SCHEMA_HEADERS)
_TYPE_NAMES = {BYTES: "bytes", TEXT: "text", JSON: "json"}
_TYPES = {name: code for code, name in _TYPE_NAMES.items()}


class Content(NamedTuple):
    """What an event is, the same in a store and in Kafka."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, str], ...]  # sorted; no headers and {} are alike
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class KafkaRecord:
    """A record read from Kafka."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] | None  # as Kafka keeps them: names may repeat
    timestamp_type: int  # 0: none, 1: CreateTime, 2: LogAppendTime
    timestamp_ms: int


class SchemaMarks:
    """The schema headers of a topic's events (:data:`SCHEMA_HEADER`,
    :data:`JSON_SCHEMA_HEADER`), from its versions (``Topic.schema_history()``, oldest
    first); no versions, no headers."""

    def __init__(self, versions: Sequence[TopicSchema] = ()) -> None:
        self._starts = [(v.from_offset, str(v.version)) for v in versions]
        self._documents = {v.from_offset: json.dumps(v.json_schema(), separators=(",", ":"))
                           for v in versions}

    def headers(self, offset: int) -> dict[str, str]:
        """The headers the event at ``offset`` carries for its schema."""
        version = None
        for start, name in self._starts:  # a topic has a handful of versions
            if start <= offset:
                version = name
        if version is None:
            return {}
        found = {SCHEMA_HEADER: version}
        document = self._documents.get(offset)
        if document is not None:
            found[JSON_SCHEMA_HEADER] = document
        return found


NO_SCHEMA = SchemaMarks()


def from_store_row(
    row: dict[str, Any], topic: str | None = None, schemas: SchemaMarks = NO_SCHEMA
) -> Content:
    """A row of ``Store.read_arrow(..., payload_format="binary")`` (as a dict), as its Kafka
    record holds it: with the :data:`TYPES_HEADER` its types need, the
    :data:`TIMESTAMP_HEADER` its stamp needs and the schema headers ``schemas`` (its
    topic's) give it, if any."""
    headers = json.loads(row["headers"]) if row["headers"] else {}
    for name in RESERVED_HEADERS:
        if name in headers:
            where = f"store topic {topic!r} offset" if topic is not None else "offset"
            raise PayloadError(
                f"{where} {row['offset']} has a header named {name!r}, a name an export "
                "reserves (docs/outgrowing.md), so it cannot be exported as it is: republish "
                "the event with that header renamed."
            )
    mark = types_mark(row["key"], row["key_type"], row["value"], row["value_type"])
    if mark is not None:
        headers[TYPES_HEADER] = mark
    if row["timestamp_ms"] == 0:  # sent as 0, Kafka's client stamps it with the time of sending
        headers[TIMESTAMP_HEADER] = "0"
    headers.update(schemas.headers(row["offset"]))
    return Content(row["key"], row["value"], tuple(sorted(headers.items())), row["timestamp_ms"])


def types_mark(
    key: bytes | None, key_type: int, value: bytes | None, value_type: int
) -> str | None:
    """The :data:`TYPES_HEADER` value for stored types an import would infer wrongly from
    the bytes (``"key=bytes,value=text"``), or None when inference gets both right."""
    wrong = [
        f"{field}={_TYPE_NAMES[stored]}"
        for field, stored, inferred in (
            ("key", key_type, _inferred_key_type(key)),
            ("value", value_type, _inferred_value_type(value)),
        )
        if stored != inferred
    ]
    return ",".join(wrong) or None


def _inferred_key_type(key: bytes | None) -> int:
    return BYTES if key is None or _utf8(key) is None else TEXT


def _inferred_value_type(value: bytes | None) -> int:
    text = None if value is None else _utf8(value)
    if text is None:
        return BYTES
    return JSON if _is_json(text) else TEXT


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def stored_types(headers: dict[str, str] | None, where: str) -> dict[str, int]:
    """Take :data:`TYPES_HEADER` out of a Kafka record's ``headers`` (in place) and return
    the stored types it names by field (``{"value": TEXT}``); ``{}`` without it."""
    if not headers or TYPES_HEADER not in headers:
        return {}
    mark = headers.pop(TYPES_HEADER)
    found: dict[str, int] = {}
    for part in mark.split(","):
        field, _, name = part.partition("=")
        if field not in ("key", "value") or name not in _TYPES or field in found:
            raise KafkaError(
                f"Kafka record {where} has header {TYPES_HEADER}={mark!r}; that name is "
                "reserved for an export's types, a comma list of key=TYPE and value=TYPE "
                "(TYPE: bytes, text or json), each field once. Remove the header from the "
                "record, or import another topic."
            )
        found[field] = _TYPES[name]
    return found


def from_message(msg: KafkaRecord) -> Content:
    """A Kafka record as content; its headers must be a map of text (see :func:`text_headers`)."""
    where = f"{msg.topic!r} [{msg.partition}] offset {msg.offset}"
    headers = text_headers(msg.headers, where)
    stamp = stored_timestamp(headers, msg.timestamp_ms, where)
    return Content(msg.key, msg.value, tuple(sorted((headers or {}).items())), stamp)


def stored_timestamp(headers: dict[str, str] | None, kafka_ms: int, where: str) -> int:
    """The event's timestamp: the :data:`TIMESTAMP_HEADER`'s, if the record has one, else
    Kafka's (``kafka_ms``)."""
    if not headers or TIMESTAMP_HEADER not in headers:
        return kafka_ms
    text = headers[TIMESTAMP_HEADER]
    if not (text.isascii() and text.isdigit()):
        raise KafkaError(
            f"Kafka record {where} has header {TIMESTAMP_HEADER}={text!r}; that name is "
            "reserved for an export's timestamps in ms (digits only). Remove the header from "
            "the record, or import another topic."
        )
    return int(text)


def headers_for_kafka(content: Content) -> list[tuple[str, str | bytes | None]] | None:
    """The content's headers as a Kafka record carries them (values UTF-8 bytes)."""
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


def stored_value(
    value: bytes | None, value_format: str, where: str, marked: int | None = None
) -> Any:
    """A Kafka value as the store keeps it, the bytes unchanged: ``auto`` stores standard
    JSON as JSON, other UTF-8 as text and the rest as bytes (what ``sqliteq publish``'s
    auto does with text), unless the record's :data:`TYPES_HEADER` named its stored type
    (``marked``); ``json``/``text`` require it; ``bytes`` keeps bytes."""
    if marked is not None and value_format == "auto":
        return _marked_value(value, marked, where)
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


def _marked_value(value: bytes | None, marked: int, where: str) -> Any:
    if marked == BYTES:
        return value
    text = None if value is None else _utf8(value)
    if value is not None and text is None:
        raise PayloadError(
            f"Kafka record {where}: its {TYPES_HEADER} header says the value is "
            f"{_TYPE_NAMES[marked]}, but it is not UTF-8 text. Import it with value_format "
            "'bytes'."
        )
    if marked == JSON and (text is None or not _is_json(text, strict=False)):
        raise PayloadError(
            f"Kafka record {where}: its {TYPES_HEADER} header says the value is JSON, but it "
            "is not. Import it with value_format 'text' or 'bytes'."
        )
    return Encoded(text, marked)  # a null text value stays NULL, stored as text


def stored_key(key: bytes | None, marked: int | None = None) -> str | bytes | None:
    """A Kafka key as the store keeps it: UTF-8 text as text, other bytes as bytes, unless
    the record's :data:`TYPES_HEADER` said it was stored as bytes (``marked``)."""
    if key is None or marked == BYTES:
        return key
    text = _utf8(key)
    return key if text is None else text


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def _is_json(text: str, strict: bool = True) -> bool:
    """Standard JSON (``strict``), or what the store reads as JSON (NaN and Infinity too)."""
    try:
        json.loads(text, parse_constant=_reject_constant if strict else None)
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

