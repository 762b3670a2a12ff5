"""What ``StreamTest.add`` publishes: the rows a test writes, as the store's records.

A value (str, bytes) is the event's value, a dict (or a list) its JSON value; a tuple is
``(key, value)`` or ``(key, value, headers)``, as a Kafka producer sends them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spark_queue.errors import ArgumentError
from spark_queue.store import Record


def as_record(row: Any) -> Any:
    """The value or :class:`~spark_queue.store.Record` ``Store.publish_many`` takes."""
    if isinstance(row, Record):
        return row
    if isinstance(row, tuple):
        if len(row) == 2:
            return Record(row[1], key=row[0])
        if len(row) == 3:
            if row[2] is not None and not isinstance(row[2], Mapping):
                raise ArgumentError(
                    f"StreamTest.add: a row's headers must be a dict of str to str; got "
                    f"{row[2]!r} in {row!r}. Write (key, value, {{'name': 'value'}}).")
            return Record(row[1], key=row[0], headers=row[2])
        raise ArgumentError(
            f"StreamTest.add: a tuple row is (key, value) or (key, value, headers); got "
            f"{len(row)} items in {row!r}. Pass a dict for a JSON value.")
    return row


def records(rows: Iterable[Any] | str | bytes | Mapping[str, Any]) -> list[Any]:
    """``rows`` as records; one value, one dict or one tuple alone is one row."""
    if isinstance(rows, (str, bytes, Mapping, tuple)):
        rows = [rows]
    return [as_record(row) for row in rows]
