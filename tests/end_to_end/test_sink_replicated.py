"""The Spark sink's row of the replicated write-path matrix (the rest is
tests/store/file/test_replicated_write_paths.py): with ``durability=replicated`` a
micro-batch is committed only once the replica holds it. With no replicator the query
fails within ``replicaWaitMs`` naming the command to run, and Spark's commit log does not
get the batch; rerun once a replicator runs, the batch is skipped by the ledger (its rows
are there already) and every row is in the target exactly once (issue 58: the sink used to
commit on its own, without the wait, and the query went on)."""

from __future__ import annotations

import threading

import pytest
from pyspark.errors import StreamingQueryException

from spark_queue.store import ReplicaCycles, Store
from tests.end_to_end.sink_helpers import json_input, run_stream, stored_events

pytestmark = pytest.mark.slow


def test_a_replicated_sink_commits_only_what_the_replica_holds(spark, tmp_path):
    target = str(tmp_path / "target.sqlite")
    with Store(target) as store:
        store.topic("out").create()
    cycles = ReplicaCycles(target)
    cycles.mark("file:///replica")
    checkpoint = str(tmp_path / "checkpoint")
    rows = [[{"n": i} for i in range(b * 5, b * 5 + 5)] for b in range(2)]
    df = (spark.readStream.schema("n INT").option("maxFilesPerTrigger", 1)
          .json(json_input(tmp_path, rows)).selectExpr("CAST(n AS STRING) AS value"))
    try:
        with pytest.raises(StreamingQueryException, match="no replicator confirmed"):
            run_stream(df, target, checkpoint, topic="out", durability="replicated",
                       replicaWaitMs=300)
        assert not (tmp_path / "checkpoint" / "commits" / "0").exists()

        stop = threading.Event()

        def replicator() -> None:
            while not stop.is_set():
                number, ends = cycles.begin()
                cycles.finish(number, ends)
                stop.wait(0.01)  # the replicator's pace, not a wait for a result

        thread = threading.Thread(target=replicator)
        thread.start()
        try:
            run_stream(df, target, checkpoint, topic="out", durability="replicated",
                       replicaWaitMs=30_000)
        finally:
            stop.set()
            thread.join()
    finally:
        cycles.close()
    values = sorted(int(e.value) for e in stored_events(target, "out"))
    assert values == list(range(10))
