"""The bounds of a worker's settings: what SQLite can bind and a thread can wait for."""

from __future__ import annotations

import warnings

from spark_queue.defaults import MAX_STORED, MAX_WAIT_MS
from spark_queue.errors import QueueConfigError
from spark_queue.setting_table import QUEUE_SETTING, check_setting
from spark_queue.store import check_int

# The store's bound on integers it binds: a lease added to epoch ms in SQL stays within
# 64 bits. MAX_WAIT_MS: what a thread can wait for at once.
MAX_LEASE_MS = MAX_BATCH_SIZE = MAX_STORED

# The worker's own settings: name -> (lowest, highest or None, may be None).
_BOUNDS: dict[str, tuple[int, int | None, bool]] = {
    "concurrency": (1, None, False),
    "batch_size": (1, MAX_BATCH_SIZE, False),
    "grace_ms": (0, MAX_WAIT_MS, False),
    "idle_poll_max_ms": (1, MAX_WAIT_MS, False),
    "heartbeat_ms": (1, MAX_WAIT_MS, True),
}
# A worker's lease overrides its queue's setting (None: the queue's own), so the queue
# setting's declaration checks it; "lease_ms" is its deprecated name.
_OVERRIDES = ("visibility_timeout_ms", "lease_ms")


def check_settings(**values: int | None) -> None:
    """Raise :class:`QueueConfigError` naming the first setting out of its bounds."""
    for name, value in values.items():
        if name in _OVERRIDES:
            if value is not None:
                declared = QUEUE_SETTING["visibility_timeout_ms"]._replace(name=name)
                check_setting(declared, value, error=QueueConfigError, owner="worker")
            continue
        low, high, optional = _BOUNDS[name]
        if value is None and optional:
            continue
        check_int(value, name, low=low, high=high, error=QueueConfigError, owner="worker")


def deprecated_lease_ms(visibility_timeout_ms: int | None, lease_ms: int | None) -> int | None:
    """The lease length: ``visibility_timeout_ms``, the queue setting's name, or
    ``lease_ms``, the worker's name for it before, with a DeprecationWarning."""
    if lease_ms is None:
        return visibility_timeout_ms
    if visibility_timeout_ms is not None:
        raise TypeError(
            "Worker() got both 'visibility_timeout_ms' and its deprecated name 'lease_ms'"
        )
    warnings.warn("Worker(lease_ms=...) is deprecated; use visibility_timeout_ms=...",
                  DeprecationWarning, stacklevel=3)
    return lease_ms
