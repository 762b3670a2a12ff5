"""The driver commit in-process (no SparkSession): one transaction, one copy of a batch."""

from __future__ import annotations

import pickle
import tracemalloc

import pyarrow as pa
import pytest

from spark_queue.connector.sink.sink_options import SinkOptions
from spark_queue.connector.sink.sink_schema import BYTES, TEXT, SinkLayout
from spark_queue.connector.sink.writers import SqliteQueueBatchWriter, SqliteQueueStreamWriter
from spark_queue.store import Store
from spark_queue.store.floor import sinks

ROWS = 1_000_000


def _batches(start: int, stop: int, size: int = 10_000):
    for first in range(start, stop, size):
        values = pa.array([f"{i:010d}-" + "v" * 89 for i in range(first, min(stop, first + size))])
        yield pa.record_batch([values], names=["value"])


def _messages(writer, parts: int = 2):
    step = ROWS // parts
    # Pickled and back, as Spark moves them from the tasks to the commit process.
    return [
        pickle.loads(pickle.dumps(writer._pack(_batches(p * step, (p + 1) * step))))
        for p in range(parts)
    ]


@pytest.mark.slow
def test_a_million_row_commit_holds_one_copy_of_the_batch(store_path):
    layout = SinkLayout(target="topic", value_type=TEXT, value_column="value")
    options = SinkOptions(path=store_path, topic="t", create_store=True)
    writer = SqliteQueueStreamWriter(options, layout)
    messages = _messages(writer)
    ipc_bytes = sum(len(m.arrow_ipc) for m in messages)

    tracemalloc.start()
    try:
        result = writer._commit(messages, "s", 0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert (result.rows, result.skipped) == (ROWS, False)
    # Python objects for the whole batch would be ~250 MB (a str and a tuple
    # per row); streaming batch by batch into executemany keeps one batch.
    assert peak < 40_000_000, f"commit peaked at {peak:,} bytes of Python objects"
    assert all(m.arrow_ipc is None for m in messages), "a consumed message kept its rows"
    assert ipc_bytes > 0
    with Store(store_path) as store:
        assert store.topic("t").bounds() == (0, ROWS)
        assert store.read("t", ROWS - 1)[0].value.startswith(f"{ROWS - 1:010d}-")


def test_commit_of_a_replayed_stream_batch_skips_and_keeps_the_rows_once(store_path):
    layout = SinkLayout(target="topic", value_type=BYTES, value_column="value", key_column="k")
    options = SinkOptions(path=store_path, topic="t", create_store=True)
    writer = SqliteQueueStreamWriter(options, layout)
    batch = pa.record_batch([pa.array([b"a", b"b"]), pa.array(["x", None])], names=["value", "k"])

    def message():
        m = writer._pack(iter([batch]))
        m.query_id, m.batch_id = "q", 3  # what a task of micro-batch 3 reports
        return m

    writer.commit([message()], 3)
    writer.commit([message()], 3)
    with Store(store_path) as store:
        assert [(e.value, e.key) for e in store.read("t")] == [(b"a", "x"), (b"b", None)]
        entry = sinks.ledger_entry(store.conn, "q")
    assert (entry.last_batch_id, entry.rows) == (3, 2)


def test_a_message_from_another_batch_is_refused(store_path):
    layout = SinkLayout(target="topic", value_type=TEXT, value_column="value")
    options = SinkOptions(path=store_path, topic="t", create_store=True)
    writer = SqliteQueueStreamWriter(options, layout)
    m = writer._pack(iter([pa.record_batch([pa.array(["a"])], names=["value"])]))
    m.query_id, m.batch_id = "q", 4
    with pytest.raises(Exception, match="task wrote micro-batch 4 but Spark commits batch 5"):
        writer.commit([m], 5)


def test_abort_writes_nothing(store_path):
    layout = SinkLayout(target="topic", value_type=TEXT, value_column="value")
    options = SinkOptions(path=store_path, topic="t", create_store=True)
    writer = SqliteQueueBatchWriter(options, layout)
    m = writer._pack(iter([pa.record_batch([pa.array(["a"])], names=["value"])]))
    writer.abort([m, None])
    with Store(store_path) as store:
        assert not store.topic("t").exists()


def test_writers_pickle_without_a_connection():
    layout = SinkLayout(target="queue", value_type=TEXT, value_column="value")
    writer = SqliteQueueStreamWriter(SinkOptions(path="/nowhere/s.sqlite", queue="q"), layout)
    clone = pickle.loads(pickle.dumps(writer))
    assert (clone.options, clone.layout) == (writer.options, writer.layout)
    # Beside them only the topic's schema as read on the driver: plain data (a TopicSchema).
    assert set(vars(clone)) == {"options", "layout", "schema"}


def test_messages_are_compressed_only_when_it_pays(store_path):
    import json
    import os

    layout = SinkLayout(target="topic", value_type=TEXT, value_column="value")
    options = SinkOptions(path=store_path, topic="t", create_store=True)
    writer = SqliteQueueStreamWriter(options, layout)
    text = [json.dumps({"id": i, "page": "/home", "event": "click"}) for i in range(20_000)]
    noise = [os.urandom(48).hex() for _ in range(20_000)]
    packed_text = writer._pack(iter([pa.record_batch([pa.array(text)], names=["value"])]))
    packed_noise = writer._pack(iter([pa.record_batch([pa.array(noise)], names=["value"])]))
    assert len(packed_text.arrow_ipc) < 0.6 * sum(map(len, text))
    assert len(packed_noise.arrow_ipc) > sum(map(len, noise))  # stored plain
    for m in (packed_text, packed_noise):
        m.query_id, m.batch_id = "q", 0 if m is packed_text else 1
        writer.commit([m], m.batch_id)
    with Store(store_path) as store:
        assert [e.value for e in store.read("t")] == text + noise
