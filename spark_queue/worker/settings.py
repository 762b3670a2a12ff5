"""The bounds of a worker's settings: what SQLite can bind and a thread can wait for."""

from __future__ import annotations

import threading

from spark_queue.errors import QueueConfigError
from spark_queue.store import check_int

# The store's bound on integers it binds (store/queues/queue_jobs.py): a lease added to epoch ms
# in SQL stays within 64 bits.
MAX_LEASE_MS = MAX_BATCH_SIZE = (1 << 62) - 1
# What a thread can wait for at once (threading.Event.wait refuses more).
MAX_WAIT_MS = int(threading.TIMEOUT_MAX * 1000)

# name -> (lowest, highest or None, may be None)
_BOUNDS: dict[str, tuple[int, int | None, bool]] = {
    "concurrency": (1, None, False),
    "batch_size": (1, MAX_BATCH_SIZE, False),
    "grace_ms": (0, MAX_WAIT_MS, False),
    "idle_poll_max_ms": (1, MAX_WAIT_MS, False),
    "lease_ms": (1, MAX_LEASE_MS, True),
    "heartbeat_ms": (1, MAX_WAIT_MS, True),
}


def check_settings(**values: int | None) -> None:
    """Raise :class:`QueueConfigError` naming the first setting out of its bounds."""
    for name, value in values.items():
        low, high, optional = _BOUNDS[name]
        if value is None and optional:
            continue
        check_int(value, name, low=low, high=high, error=QueueConfigError, owner="worker")
