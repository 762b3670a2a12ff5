"""Runs under one consumer name, each from a new checkpoint (the old one deleted) with
``startingOffsets=committed``: each goes on where the last one's committed batches ended,
and retention moves with them (issue #59: every run after the second read the second
one's range again, and the first run's position held retention for good)."""

from __future__ import annotations

import shutil

import pytest

from spark_queue.store import Store
from tests.end_to_end.source_helpers import run_available_now

pytestmark = pytest.mark.slow

ROWS_PER_RUN = 100
BATCH_ROWS = 40  # three batches a run: the last one is never committed (docs/reading.md)


def test_runs_with_deleted_checkpoints_go_on_from_the_last_one_and_release_retention(
        spark, store_path, tmp_path):
    checkpoint = str(tmp_path / "checkpoint")
    with Store(store_path) as store:
        starts, positions = [], []
        for _run in range(3):
            store.publish_many("t", range(ROWS_PER_RUN))
            shutil.rmtree(checkpoint, ignore_errors=True)  # a fresh checkpoint each run
            batches, _query = run_available_now(
                spark, store_path, checkpoint, topic="t", consumer="bronze",
                startingOffsets="committed", maxRowsPerTrigger=BATCH_ROWS)
            offsets = [offset for _, rows in batches for _, offset in rows]
            assert offsets == list(range(offsets[0], store.topic("t").bounds()[1]))
            starts.append(offsets[0])
            [position] = store.consumer_positions("t")  # the run before was taken over
            # Its committed batches: all but the last (whose commit no later batch brings).
            last_batch_start = batches[-1][1][0][1]
            assert position.next_offset == last_batch_start
            positions.append(position.next_offset)
        # Each run starts at the end of the batches the one before committed: at-least-once
        # for its last batch only, never the whole range of an earlier run again.
        assert starts == [0, *positions[:-1]]
        assert store.committed_offsets("bronze") == {"t": positions[-1]}
        [pruned] = store.topic("t").prune(retention_rows=1)
        assert (pruned.earliest_after, pruned.held_by) == (positions[-1], "bronze")
