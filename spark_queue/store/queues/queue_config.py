"""A queue's settings as one row of ``sq_queues``: the type every queue module reads.

Its own module so the queue modules (claims, leases, controls, admin) can
share it without importing each other.
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypedDict


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


CONFIG_COLUMNS = (
    "id, name, visibility_timeout_ms, max_attempts, backoff_base_ms, backoff_cap_ms, "
    "max_size, idempotency_window_ms, created_ms, paused != 0, max_leased, rate_limit_per_s, "
    "rate_burst, max_payload_bytes, rate_tokens, rate_updated_ms, dead_retention_ms, "
    "dead_retention_rows"
)


def config_from_row(row: tuple[Any, ...]) -> QueueConfig:
    # Built in one call, not QueueConfig(*row)._replace(...): every claim and ack reads it.
    return QueueConfig._make((*row[:9], row[9] == 1, *row[10:]))
