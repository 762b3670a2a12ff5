"""Replication's Prometheus gauges, for :mod:`spark_queue.metrics` (``sqliteq metrics``),
declared in :mod:`spark_queue.metric_table` (``REPLICA_*``): events not yet confirmed in the
replica (readers do not see them yet), how long they have waited, the last confirmed sync, and
the object-store requests per hour. The requests are LTX files shipped over the last 5 minutes,
as a rate per hour, read from Litestream's local directory beside the store (its level-0
files stay there for 5 minutes by default).

A store that is not replicated has none of them.
"""

from __future__ import annotations

import os
import time

from spark_queue import metric_table as table
from spark_queue.store import ReplicaStatus, replica_status

#: Litestream keeps level-0 LTX files locally this long by default (its L0 retention).
_WINDOW_S = 300


def samples(store_path: str, now_s: float | None = None,
            ) -> list[tuple[table.Metric, dict[str, str], float]]:
    """``(metric, labels, value)`` of each gauge for the store at ``store_path``, at
    ``now_s`` (seconds since the epoch; None: now)."""
    status = replica_status(store_path)
    if status is None:
        return []
    now_s = time.time() if now_s is None else now_s
    where = {"store": store_path, "replica": status.url}
    found: list[tuple[table.Metric, dict[str, str], float]] = [
        (table.REPLICA_LAG_EVENTS, {**where, "topic": topic}, behind)
        for topic, behind in status.behind.items()
    ]
    synced_s = 0.0 if status.synced_ms is None else status.synced_ms / 1000
    found += [
        (table.REPLICA_LAG_AGE, where, lag_seconds(status, now_s)),
        (table.REPLICA_LAST_SYNC, where, synced_s),
        (table.REPLICA_REQUESTS, where, shipped_per_hour(store_path, now_s)),
    ]
    return found


def lag_seconds(status: ReplicaStatus, now_s: float) -> float:
    """How long events have waited for the replica: 0 when none waits; else since the last
    confirmed sync, or, for a replica that never synced (a wrong bucket, bad credentials,
    a replicator that gave up at its first sync), since the first event that waits."""
    if status.waiting_since_ms is None:
        return 0.0
    since_ms = status.waiting_since_ms if status.synced_ms is None else status.synced_ms
    return max(0.0, now_s - since_ms / 1000)


def shipped_per_hour(store_path: str, now_s: float) -> float:
    """LTX files Litestream wrote for the store in the last 5 minutes, as a rate per hour."""
    folder = os.path.join(os.path.dirname(os.path.abspath(store_path)),
                          f".{os.path.basename(store_path)}-litestream", "ltx", "0")
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0.0
    recent = sum(1 for entry in entries
                 if entry.name.endswith(".ltx") and now_s - entry.stat().st_mtime <= _WINDOW_S)
    return recent * 3600 / _WINDOW_S
