"""How Python values become stored payloads, and back.

=====================  ==========================  ==================  ============
Python value           stored ``value``            ``value_type``      read back as
=====================  ==========================  ==================  ============
``bytes``/bytearray    BLOB, as is                 0 (bytes)           ``bytes``
``str``                TEXT, as is                 1 (text)            ``str``
``None``               NULL                        0 (bytes)           ``None``
anything else          TEXT, compact JSON (UTF-8)  2 (json)            ``json.loads``
=====================  ==========================  ==================  ============

``None`` is the null value (Kafka's tombstone), as a null ``value`` column
written through Spark's sink is: SQL NULL, not the JSON text ``null``.
"Anything else" must be JSON-serializable by the standard library: dict (str
keys), list, tuple (read back as a list), int, float (finite) and bool.
Keys are ``str``, ``bytes`` or None, stored as TEXT/BLOB/NULL. Headers are a
mapping of ``str`` to ``str``, stored as a JSON object in TEXT, or NULL.
Nothing is ever pickled: any SQLite client in any language reads these rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from spark_queue.errors import CorruptStoreError, PayloadError

BYTES, TEXT, JSON = 0, 1, 2
VALUE_TYPE_NAMES = {BYTES: "bytes", TEXT: "text", JSON: "json"}

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class Encoded(NamedTuple):
    """A value :func:`encode_value` already encoded, handed on to be stored as is.

    The producer encodes a payload in the calling thread (so a bad one fails
    there, and later changes to a mutable value are not seen) and its writer
    thread stores this result without encoding it again.
    """

    stored: Any
    value_type: int


def check_text(text: str, what: str) -> str:
    """``text`` if UTF-8 can encode it (SQLite keeps text as UTF-8); PayloadError otherwise.

    A Python str may hold a lone surrogate (``"\\ud800"``, from a bad decode):
    found here, in the caller's thread, it fails that one call with a named
    error instead of the whole transaction with a UnicodeEncodeError.
    """
    if not text.isascii():  # the common case costs one C-speed scan
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise PayloadError(
                f"{what} holds {text[exc.start:exc.end]!r} at position {exc.start}: "
                f"{exc.reason}, so it is not Unicode text UTF-8 can store. Publish bytes, "
                "or decode the source with errors='replace'."
            ) from exc
    return text


def encode_value(value: Any) -> tuple[Any, int]:
    """Return ``(stored, value_type)`` for ``value``; raise PayloadError if it cannot be stored."""
    if isinstance(value, str):
        return check_text(value, "value"), TEXT
    if value is None:
        return None, BYTES
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value), BYTES
    if type(value) is Encoded:
        return value
    try:
        text = _dumps(value)
    except (TypeError, ValueError) as exc:
        raise PayloadError(
            f"value of type {type(value).__name__} cannot be stored: {exc}. Publish str, "
            "bytes, None, or a JSON-serializable object (dict, list, int, float, bool)."
        ) from exc
    return check_text(text, "value (as JSON)"), JSON


def decode_value(stored: Any, value_type: int) -> Any:
    """The Python value of a stored payload; CorruptStoreError if a type-2 value is not JSON."""
    if value_type == JSON:
        try:
            return json.loads(stored)
        except (TypeError, ValueError) as exc:
            kind = "text that is not valid JSON" if isinstance(stored, str) else (
                f"a {type(stored).__name__} value, not JSON text"
            )
            raise CorruptStoreError(f"value_type 2 (json) holds {kind} ({exc})") from exc
    return stored


def encode_key(key: Any) -> str | bytes | None:
    if isinstance(key, str):
        return check_text(key, "key")
    if key is None or isinstance(key, bytes):
        return key
    if isinstance(key, (bytearray, memoryview)):
        return bytes(key)
    raise PayloadError(f"key must be str, bytes or None; got {type(key).__name__} {key!r}.")


def encode_headers(headers: Mapping[str, str] | None) -> str | None:
    if headers is None:
        return None
    if not isinstance(headers, Mapping):
        raise PayloadError(
            f"headers must be a mapping of str to str; got {type(headers).__name__}."
        )
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise PayloadError(
                f"headers must map str to str; got {name!r}: {value!r} "
                f"({type(name).__name__} to {type(value).__name__})."
            )
    return check_text(_dumps(dict(headers)), "headers (as JSON)") if headers else None


def decode_headers(stored: str | None) -> dict[str, str] | None:
    """Stored headers as a dict of str to str; CorruptStoreError for any other shape."""
    if stored is None:
        return None
    check_headers(stored)
    return json.loads(stored)


def check_headers(stored: Any) -> None:
    """Raise CorruptStoreError unless ``stored`` is JSON text of an object of strings.

    Other SQLite clients can store anything in ``headers``; a reader that
    trusted the shape would fail later with an AttributeError far from the row.
    """
    try:
        headers = json.loads(stored)
    except (TypeError, ValueError) as exc:
        raise CorruptStoreError(f"headers are not JSON text ({exc})") from exc
    if not isinstance(headers, dict):
        raise CorruptStoreError(
            f"headers are JSON but not an object of strings (a {type(headers).__name__})"
        )
    for value in headers.values():
        if not isinstance(value, str):
            raise CorruptStoreError(
                f"headers hold a value that is not a string ({type(value).__name__} {value!r})"
            )
