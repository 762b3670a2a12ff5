"""Payload size limits: a queue's or topic's ``max_payload_bytes``.

A payload is measured as stored: the bytes of a BLOB, the UTF-8 bytes of text
and of JSON text (keys and headers are not counted). A batch with one payload
over the limit is refused whole with :class:`PayloadTooLargeError` naming the
row; nothing is ever truncated. The checks run in the writing transaction
(``enqueue_rows``, ``topics.append*``), so the Spark sink's commit, which
calls those, fails its batch whole too.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import apsw

from spark_queue.errors import OptionError, PayloadTooLargeError
from spark_queue.setting_table import TOPIC_SETTING, check_setting


def payload_bytes(value: Any) -> int:
    """Size of a stored value (str, bytes, memoryview or None) in bytes."""
    if value is None:
        return 0
    if type(value) is str:
        return len(value) if value.isascii() else len(value.encode("utf-8"))
    return len(value)


def too_large(index: int, size: int, limit: int, owner: str, fix: str) -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"{owner} refuses row {index} of the batch (counting from 0): its payload is "
        f"{size} bytes, over the max_payload_bytes of {limit}; nothing of the batch was "
        f"stored. Store large data elsewhere and send a reference, or raise the limit "
        f"(`{fix}`)."
    )


def check_sizes(
    values: Iterable[Any], limit: int, owner: str, fix: str, first: int | Iterable[int] = 0
) -> None:
    """Raise for the first of ``values`` over ``limit``, naming its row: ``first``,
    ``first + 1``, ... or, when ``first`` is a sequence, the row it gives each value."""
    rows = itertools.count(first) if isinstance(first, int) else first
    for index, value in zip(rows, values, strict=False):  # count() never ends
        # A str of n characters has n to 4n UTF-8 bytes: most need no encoding.
        if type(value) is str and len(value) * 4 <= limit:
            continue
        size = payload_bytes(value)
        if size > limit:
            raise too_large(index, size, limit, owner, fix)


_Row = TypeVar("_Row", bound=tuple[Any, ...])


def checked_rows(
    rows: Iterable[_Row], value_at: int, limit: int, owner: str, fix: str
) -> Iterator[_Row]:
    """Pass ``rows`` through, raising for the first whose ``row[value_at]`` is over ``limit``."""
    for index, row in enumerate(rows):
        value = row[value_at]
        if not (type(value) is str and len(value) * 4 <= limit):
            size = payload_bytes(value)
            if size > limit:
                raise too_large(index, size, limit, owner, fix)
        yield row


def topic_fix(topic: str) -> str:
    return f"sqliteq topic config PATH {topic} --max-payload-bytes N"


def validate_limit(value: Any, owner: str) -> int | None:
    """A topic's ``max_payload_bytes`` as declared (spark_queue/setting_table.py)."""
    return check_setting(TOPIC_SETTING["max_payload_bytes"], value, error=OptionError,
                         owner=owner)


def set_topic_limit(conn: apsw.Connection, topic_id: int, max_payload_bytes: int | None) -> None:
    """Store a topic's payload limit (None removes it); the caller holds the write transaction."""
    conn.execute(
        "UPDATE sq_topics SET max_payload_bytes = ? WHERE id = ?", (max_payload_bytes, topic_id)
    )
