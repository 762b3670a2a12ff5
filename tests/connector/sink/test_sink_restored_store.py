"""The sink facing a store put back to a copy older than the query's checkpoint (issue 49):
Spark sends the batch after the last one it committed; the ledger ends earlier, and writing
on would lose the batches in between for good. The driver's commit is called as Spark calls
it (no SparkSession): a task's message carries the query id and batch id of its micro-batch."""

from __future__ import annotations

import logging
import os

import pyarrow as pa
import pytest

from spark_queue.connector.sink.sink_options import SinkOptions
from spark_queue.connector.sink.sink_schema import TEXT, SinkLayout
from spark_queue.connector.sink.writers import SqliteQueueBatchWriter, SqliteQueueStreamWriter
from spark_queue.errors import StoreRewoundError
from spark_queue.store import Store, backup_file
from spark_queue.store.floor import sinks

QUERY = "3f2c9a1e-8d4b-4c1a-9e0f-5b6d7c8e9f01"  # a streaming query id: the sink's id


def writer_for(path: str, target: str = "topic") -> SqliteQueueStreamWriter:
    layout = SinkLayout(target=target, value_type=TEXT, value_column="value")
    options = (SinkOptions(path=path, topic="out", create_store=True) if target == "topic"
               else SinkOptions(path=path, queue="jobs", create_store=True))
    return SqliteQueueStreamWriter(options, layout)


def commit(writer, batch_id: int, values: list[str]) -> None:
    """One micro-batch as Spark runs it: a task packs its rows, the driver commits."""
    message = writer._pack(iter([pa.record_batch([pa.array(values, pa.string())],
                                                 names=["value"])]))
    message.query_id, message.batch_id = QUERY, batch_id  # the task's local properties
    writer.commit([message], batch_id)


def put_back(copy: str, path: str) -> None:
    for name in os.listdir(os.path.dirname(path)):
        if name.startswith(os.path.basename(path)):
            os.remove(os.path.join(os.path.dirname(path), name))
    os.rename(copy, path)


def ledger(path: str) -> int | None:
    with Store(path) as store:
        entry = sinks.ledger_entry(store.conn, QUERY)
    return None if entry is None else entry.last_batch_id


@pytest.mark.parametrize("target", ["topic", "queue"])
def test_batch_10_after_a_restored_ledger_at_4_is_refused_and_writes_nothing(
    store_path, tmp_path, target
):
    writer = writer_for(store_path, target)
    for batch in range(5):
        commit(writer, batch, [f"b{batch}"])
    copy = str(tmp_path / "backup.sqlite")
    backup_file(store_path, copy)  # the ledger at batch 4
    for batch in range(5, 10):
        commit(writer, batch, [f"b{batch}"])  # Spark's checkpoint: committed through 9
    put_back(copy, store_path)
    with Store(store_path) as store:
        before = (store.topic("out").bounds() if target == "topic"
                  else store.queue("jobs").stats().ready)

    with pytest.raises(StoreRewoundError) as raised:
        commit(writer, 10, ["b10"])  # Spark replays nothing: it sends the next batch
    message = str(raised.value)
    assert f"sink '{QUERY}' commits batch 10" in message
    assert "ledger of" in message and store_path in message and "ends at batch 4" in message
    assert "batches 5 to 9" in message and "nothing was written" in message
    for way_out in ("no older than the checkpoint", "UPDATE sq_sink_commits SET "
                    f"last_batch_id = 9 WHERE sink_id = '{QUERY}'", "new checkpointLocation"):
        assert way_out in message
    assert "\n" not in message
    with Store(store_path) as store:
        after = (store.topic("out").bounds() if target == "topic"
                 else store.queue("jobs").stats().ready)
    assert after == before and ledger(store_path) == 4


def test_the_way_out_of_accepting_the_loss_lets_the_query_go_on(store_path, tmp_path):
    writer = writer_for(store_path)
    commit(writer, 0, ["b0"])
    copy = str(tmp_path / "backup.sqlite")
    backup_file(store_path, copy)
    put_back(copy, store_path)
    with pytest.raises(StoreRewoundError):
        commit(writer, 3, ["b3"])
    with Store(store_path) as store, store.conn:  # what the message says to run
        store.conn.execute("UPDATE sq_sink_commits SET last_batch_id = 2 WHERE sink_id = ?",
                           (QUERY,))
    commit(writer, 3, ["b3"])
    with Store(store_path) as store:
        assert [e.value for e in store.read("out")] == ["b0", "b3"]


def test_replays_are_skipped_and_the_next_batch_is_written_after_a_restore(store_path,
                                                                           tmp_path):
    writer = writer_for(store_path)
    for batch in range(5):
        commit(writer, batch, [f"b{batch}"])
    copy = str(tmp_path / "backup.sqlite")
    backup_file(store_path, copy)
    put_back(copy, store_path)  # a copy as new as the ledger: nothing lost
    commit(writer, 4, ["b4"])  # Spark replays the batch it had not marked committed
    commit(writer, 5, ["b5"])
    with Store(store_path) as store:
        assert [e.value for e in store.read("out")] == [f"b{i}" for i in range(6)]


def test_a_batch_with_no_rows_records_its_id_so_the_next_one_is_no_gap(store_path):
    # Spark runs a micro-batch whose rows were all filtered out (or whose source range is
    # empty) with one task and no rows, and calls commit for it: measured on pyspark 4.2.
    writer = writer_for(store_path)
    commit(writer, 0, ["a"])
    commit(writer, 1, [])
    assert ledger(store_path) == 1
    commit(writer, 2, ["b"])
    assert ledger(store_path) == 2


def test_a_first_batch_past_0_on_an_empty_ledger_is_written_with_a_warning(store_path, caplog):
    writer = writer_for(store_path)
    with caplog.at_level(logging.WARNING, logger="spark_queue.store"):
        commit(writer, 6, ["a"])  # e.g. the store was created after the query started
    assert ledger(store_path) == 6
    assert "no ledger entry" in caplog.text and "batches 0 to 5 are missing" in caplog.text


def test_batch_writes_with_their_own_batch_ids_may_skip_ids(store_path):
    # df.write with sinkId and batchId (exactly-once foreachBatch): a foreachBatch that
    # writes only some batches leaves gaps that are no loss.
    layout = SinkLayout(target="topic", value_type=TEXT, value_column="value")
    for batch_id in (0, 5):
        options = SinkOptions(path=store_path, topic="out", create_store=True, sink_id="fb",
                              batch_id=batch_id)
        writer = SqliteQueueBatchWriter(options, layout)
        batch = pa.record_batch([pa.array([f"b{batch_id}"])], names=["value"])
        writer.commit([writer._pack(iter([batch]))])
    with Store(store_path) as store:
        assert [e.value for e in store.read("out")] == ["b0", "b5"]
