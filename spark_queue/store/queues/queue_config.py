"""A queue's settings as one row of ``sq_queues``: the type every queue module reads.

Its own module so the queue modules (claims, leases, controls, admin) can
share it without importing each other.
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypedDict

from spark_queue.setting_table import QUEUE_SETTING, stored_problem


class QueueConfig(NamedTuple):
    """A queue's settings (the controls are explained in :mod:`.controls`).

    ``rate_tokens``/``rate_updated_ms`` are the rate limit's bucket as last
    written, not a setting.
    """

    id: int
    name: str
    visibility_timeout_ms: int
    max_attempts: int
    backoff_base_ms: int
    backoff_cap_ms: int
    max_size: int | None
    idempotency_window_ms: int
    created_ms: int
    paused: bool = False
    max_leased: int | None = None
    rate_limit_per_s: float | None = None
    rate_burst: int | None = None
    max_payload_bytes: int | None = None
    rate_tokens: float | None = None
    rate_updated_ms: int | None = None
    dead_retention_ms: int | None = None
    dead_retention_rows: int | None = None


class QueueSettings(TypedDict, total=False):
    """The settings :meth:`Store.queue <spark_queue.store.Store.queue>` and
    :meth:`Queue.configure <spark_queue.store.Queue.configure>` take by keyword: the
    declaration in :mod:`spark_queue.setting_table`, spelled statically for mypy
    (``tests/test_setting_table.py`` holds the two together).

    A setting left out keeps its value (a new queue starts with the defaults);
    None switches a limit off. Checked when given: a bad value or an unknown
    name is a ``QueueConfigError``.
    """

    visibility_timeout_ms: int
    max_attempts: int
    backoff_base_ms: int
    backoff_cap_ms: int
    max_size: int | None
    idempotency_window_ms: int
    paused: bool
    max_leased: int | None
    rate_limit_per_s: float | None
    rate_burst: int | None
    max_payload_bytes: int | None
    dead_retention_ms: int | None
    dead_retention_rows: int | None


# How a field is read where the column alone is not its value: ``paused`` is stored as 0/1.
_COLUMN_SQL = {"paused": "paused != 0 AS paused"}
#: The SELECT list of every read of a queue's settings: QueueConfig's fields by name, in
#: its order, so a field added to QueueConfig is read with it.
CONFIG_COLUMNS = ", ".join(_COLUMN_SQL.get(name, name) for name in QueueConfig._fields)


def config_from_row(row: tuple[Any, ...]) -> QueueConfig:
    """A row of :data:`CONFIG_COLUMNS` as a QueueConfig, each value by its column's name."""
    config = dict(zip(QueueConfig._fields, row, strict=True))
    config["paused"] = config["paused"] == 1
    return QueueConfig(**config)


def bad_settings(queue: object, values: dict[str, object]) -> list[str]:
    """The queue settings among ``values`` (column -> stored value) that break their
    declaration, each said as ``sqliteq check`` and housekeeping say it."""
    said = []
    for column, value in values.items():
        problem = stored_problem(QUEUE_SETTING[column], value)
        if problem is not None:
            flag = QUEUE_SETTING[column].flag
            how = f"`sqliteq queue config PATH QUEUE {flag} ...` or " if flag else ""
            said.append(
                f"queue {queue!r}: sq_queues.{column} {problem} (another SQLite client wrote "
                f"it); housekeeping skips what it governs until it is set again: {how}"
                "Queue.configure")
    return said
