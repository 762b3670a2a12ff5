"""A store put back to a backup older than a query's checkpoint, through a real Spark
(issue 49): a sqliteq -> sqliteq query whose sink store is put back to an older copy stops at
the batch past its ledger, writing nothing; once its source store is put back too, the
query stops at its first trigger, and still after 100 new events. The connector-level tests
(tests/connector/source/test_lineage.py, tests/connector/sink/test_sink_restored_store.py)
walk every reader and case; this one proves Spark calls them as those tests do."""

from __future__ import annotations

import os

import pytest
from pyspark.errors import StreamingQueryException

from spark_queue.store import Store, backup_file
from spark_queue.store.floor import sinks
from tests.end_to_end.sink_helpers import run_stream
from tests.end_to_end.source_helpers import stream

pytestmark = pytest.mark.slow


def run(spark, source: str, sink: str, checkpoint: str) -> None:
    """One availableNow run of the pipeline: source topic 'in' -> sink topic 'out'."""
    run_stream(stream(spark, source, topic="in").select("value"), sink, checkpoint, topic="out")


def put_back(copy: str, path: str) -> None:
    for name in os.listdir(os.path.dirname(path)):
        if name.startswith(os.path.basename(path)):
            os.remove(os.path.join(os.path.dirname(path), name))
    os.rename(copy, path)


def publish(path: str, values: list[str]) -> None:
    with Store(path) as store:
        store.publish_many("in", values)


def test_a_query_facing_stores_older_than_its_checkpoint_stops_loudly(spark, tmp_path):
    source, sink = str(tmp_path / "source.sqlite"), str(tmp_path / "sink.sqlite")
    checkpoint = str(tmp_path / "checkpoint")
    with Store(sink):
        pass
    publish(source, [f"a{i}" for i in range(5)])
    run(spark, source, sink, checkpoint)  # batch 0
    backup_file(source, str(tmp_path / "source-copy.sqlite"))  # the source at offset 5
    backup_file(sink, str(tmp_path / "sink-copy.sqlite"))  # the ledger at batch 0
    publish(source, [f"b{i}" for i in range(5)])
    run(spark, source, sink, checkpoint)  # batch 1: source at 10, ledger at 1

    put_back(str(tmp_path / "sink-copy.sqlite"), sink)
    publish(source, ["c0"])
    with pytest.raises(StreamingQueryException) as raised:
        run(spark, source, sink, checkpoint)  # batch 2 reaches a ledger at batch 0
    assert "commits batch 2, but the ledger" in str(raised.value)
    assert "ends at batch 0: batch 1, which the query's checkpoint" in str(raised.value)
    with Store(sink) as store:
        assert store.topic("out").bounds() == (0, 5)  # nothing written
        assert [e.last_batch_id for e in sinks.list_ledger(store.conn)] == [0]

    put_back(str(tmp_path / "source-copy.sqlite"), source)
    with pytest.raises(StreamingQueryException) as raised:
        run(spark, source, sink, checkpoint)  # batch 2 replayed: its range ends past 5
    assert "StoreRewoundError" in str(raised.value)
    assert "the checkpoint is at offset" in str(raised.value)
    assert "topic 'in' but the store's latest offset is 5" in str(raised.value)

    publish(source, [f"new-{i}" for i in range(100)])  # offsets 5..104: past the checkpoint
    with pytest.raises(StreamingQueryException) as raised:
        run(spark, source, sink, checkpoint)
    assert "holds another event there" in str(raised.value)
    with Store(sink) as store:
        assert store.topic("out").bounds() == (0, 5)
