"""The sink's tasks check their rows against the topic's schema where they encode them, in
parallel, and mark their message when all fit; the commit then checks only unmarked
messages' rows (in-process, no SparkSession)."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from spark_queue.connector.sink.sink_options import SinkOptions
from spark_queue.connector.sink.sink_schema import JSON, TEXT, SinkLayout
from spark_queue.connector.sink.writers import SqliteQueueStreamWriter, check_target
from spark_queue.errors import SchemaMismatchError
from spark_queue.store import Store

LAYOUT = SinkLayout(target="topic", value_type=TEXT, value_column="value")


def _pack(writer, values):
    batch = pa.record_batch([pa.array(values)], names=["value"])
    # Pickled and back, as Spark moves writers to the tasks and messages to the commit.
    task = pickle.loads(pickle.dumps(writer))
    return pickle.loads(pickle.dumps(task._pack(iter([batch]))))


def _writer(store_path):
    options = SinkOptions(path=store_path, topic="t")
    return SqliteQueueStreamWriter(options, LAYOUT, check_target(options, LAYOUT))


def test_a_task_marks_its_message_only_when_every_row_fits(store, store_path):
    schema = store.topic("t").set_schema("device STRING NOT NULL, temp DOUBLE")
    writer = _writer(store_path)
    assert writer.schema == schema

    assert _pack(writer, ['{"device":"a","temp":1}', '{"device":"b"}']).checked == (
        schema.checked)
    assert _pack(writer, ['{"device":"a"}', '{"temp":1}']).checked is None


def test_an_unmarked_message_is_checked_at_the_commit_naming_its_row(store, store_path):
    store.topic("t").set_schema("device STRING NOT NULL")
    writer = _writer(store_path)
    good = _pack(writer, ['{"device":"a"}'])
    bad = _pack(writer, ['{"device":"b"}', '{"temp":1}'])
    with pytest.raises(SchemaMismatchError, match=r"item 2 of the batch: field device"):
        writer._commit([good, bad], "s", 0)
    assert store.topic("t").latest_offset() == 0  # nothing of the batch


def test_a_message_marked_before_the_schema_changed_is_checked_again(store, store_path):
    store.topic("t").set_schema("device STRING NOT NULL, temp STRING")
    writer = _writer(store_path)
    marked = _pack(writer, ['{"device":"a","temp":"hot"}'])
    assert marked.checked is not None
    store.topic("t").set_schema("device STRING NOT NULL, temp DOUBLE", compatibility="none")
    with pytest.raises(SchemaMismatchError, match="field temp must be DOUBLE"):
        writer._commit([marked], "s", 0)


def test_a_topic_without_a_schema_or_a_queue_gives_its_tasks_nothing_to_check(store_path):
    with Store(store_path) as store:
        store.topic("t").create()
    assert check_target(SinkOptions(path=store_path, topic="t"), LAYOUT) is None
    assert check_target(SinkOptions(path=store_path + ".missing", topic="t",
                                    create_store=True), LAYOUT) is None
    assert check_target(SinkOptions(path=store_path, queue="q"),
                           SinkLayout(target="queue", value_type=TEXT,
                                      value_column="value")) is None


def test_whole_row_json_is_checked_from_the_rows_dicts_with_the_texts_verdict(store,
                                                                              store_path):
    schema = store.topic("t").set_schema("device STRING NOT NULL, temp DOUBLE")
    layout = SinkLayout(target="topic", value_type=JSON, json_columns=("device", "temp"))
    options = SinkOptions(path=store_path, topic="t")
    writer = SqliteQueueStreamWriter(options, layout, check_target(options, layout))

    def pack(devices, temps):
        batch = pa.record_batch([pa.array(devices, pa.string()), pa.array(temps, pa.float64())],
                                names=["device", "temp"])
        return writer._pack(iter([batch]))

    assert pack(["a", "b"], [1.5, None]).checked == schema.checked
    assert pack(["a", None], [1.5, 2.0]).checked is None  # device is NOT NULL
    # NaN goes in as the string "NaN" (Spark's to_json), which a DOUBLE refuses.
    nan = pack(["a"], [float("nan")])
    assert nan.checked is None
    with pytest.raises(SchemaMismatchError, match='got text "NaN"'):
        writer._commit([nan], "s", 0)
