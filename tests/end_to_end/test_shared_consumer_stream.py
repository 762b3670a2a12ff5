"""One source DataFrame with a ``consumer``, written by two streaming queries, one of them
held inside its ``foreachBatch``, while retention applies itself (1 ms housekeeping, 100
rows kept): the held query's unread events stay, it resumes without a DataLossError, and
both queries see every event exactly once (issue #55)."""

from __future__ import annotations

import threading
import time

import pytest

from spark_queue.store import Store
from tests.end_to_end.source_helpers import TIMEOUT_S, stream

pytestmark = pytest.mark.slow

BATCH_ROWS = 100


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_slow_query_on_a_shared_consumer_keeps_its_unread_events(spark, store_path, tmp_path):
    with Store(store_path) as store:
        store.housekeeping.set_interval(1)
        store.topic("readings").configure(retention_rows=BATCH_ROWS)
        store.publish_many("readings", range(3 * BATCH_ROWS))
        seen: dict[str, list[int]] = {"fast": [], "slow": []}
        held, release = threading.Event(), threading.Event()

        def fast(df, _batch_id):
            seen["fast"].extend(row.offset for row in df.select("offset").collect())

        def slow(df, batch_id):
            seen["slow"].extend(row.offset for row in df.select("offset").collect())
            if batch_id == 1:
                held.set()
                release.wait(TIMEOUT_S)

        readings = stream(spark, store_path, topic="readings", consumer="bronze",
                          startingOffsets="earliest", maxRowsPerTrigger=BATCH_ROWS)
        queries = [
            readings.writeStream.foreachBatch(fn).trigger(processingTime="100 milliseconds")
            .option("checkpointLocation", str(tmp_path / name)).start()
            for name, fn in (("fast", fast), ("slow", slow))
        ]
        try:
            assert held.wait(TIMEOUT_S), "the slow query never reached its second batch"
            slow_read = len(seen["slow"])  # batches 0 and 1: read, batch 1 not committed
            store.publish_many("readings", range(10 * BATCH_ROWS))
            latest = store.topic("readings").bounds()[1]
            wait_until(lambda: len(seen["fast"]) == latest, "the fast query to read all")
            # Retention ran (the fast query is done), held at the slow query's position.
            wait_until(lambda: store.topic("readings").earliest_offset() >= BATCH_ROWS,
                       "retention to run")
            earliest = store.topic("readings").bounds()[0]
            assert earliest <= slow_read
            positions = sorted(p.next_offset for p in store.consumer_positions("readings"))
            assert positions[0] == earliest and positions[-1] >= latest - BATCH_ROWS
            release.set()
            for query in queries:
                query.processAllAvailable()
                assert query.exception() is None
        finally:
            release.set()
            for query in queries:
                query.stop()
        assert sorted(seen["slow"]) == list(range(latest))
        assert sorted(seen["fast"]) == list(range(latest))
