"""The replica's gauges, on a fixed clock: the lag of a replica that never synced counts
from the first event that waits for it (issue 58, point 6)."""

from __future__ import annotations

from spark_queue import metric_table as table
from spark_queue.replication import replica_metrics
from spark_queue.store import ReplicaCycles, Store


def _lag(store: str, now_s: float) -> float:
    return {metric: value for metric, _, value in replica_metrics.samples(store, now_s)
            }[table.REPLICA_LAG_AGE]


def test_the_lag_of_a_replica_that_never_synced_counts_from_the_first_waiting_event(tmp_path):
    store = str(tmp_path / "s.sqlite")
    cycles = ReplicaCycles(store)
    cycles.mark("file:///replica")  # marked, and no replicator ever syncs
    first_ms = 1_700_000_000_000
    with Store(store) as s:
        assert _lag(store, first_ms / 1000) == 0.0  # nothing waits
        s.publish("a", 1, timestamp_ms=first_ms)
        s.publish("b", 2, timestamp_ms=first_ms + 5_000)
        s.publish("a", 3, timestamp_ms=first_ms + 9_000)
    assert _lag(store, first_ms / 1000 + 60) == 60.0
    assert _lag(store, first_ms / 1000 + 600) == 600.0  # grows with the clock
    number, ends = cycles.begin()
    cycles.finish(number, ends)
    synced_s = cycles.status().synced_ms / 1000
    assert _lag(store, synced_s + 600) == 0.0  # the replica holds everything
    with Store(store) as s:
        s.publish("a", 4)
    assert _lag(store, synced_s + 30) == 30.0  # since the last confirmed sync
    cycles.close()
