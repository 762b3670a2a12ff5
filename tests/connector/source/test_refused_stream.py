"""A stream's refused options (a batch-only option, a missing store) reach Spark as the
option error alone, raised on its first call to the reader, with stop() succeeding so
pyspark's runner adds nothing of its own."""

from __future__ import annotations

import pytest

from spark_queue.errors import OptionError, StoreNotFoundError


@pytest.mark.parametrize("mode", ["auto", "throughput", "low"])
@pytest.mark.parametrize(
    "name, value",
    [("endingOffsets", "latest"), ("endingOffsetsByTimestamp", '{"a": 1}'),
     ("endingTimestamp", "1700000000000")],
)
def test_a_batch_only_option_on_a_stream_is_raised_on_the_first_call(
    store_path, store, mode, name, value
):
    from spark_queue.connector.datasource import SqliteQueueDataSource

    store.publish("a", b"x")
    source = SqliteQueueDataSource(
        {"path": store_path, "topic": "a", "latencyMode": mode, name: value}
    )
    schema = source.schema()  # load(): Spark's call cannot tell a stream from a batch read
    reader = source.streamReader(schema)
    for call in (reader.initialOffset, reader.latestOffset, lambda: reader.commit({"a": 1})):
        with pytest.raises(OptionError, match=f"'{name}'.*batch reads"):
            call()
    reader.stop()


def test_a_missing_store_on_a_stream_is_raised_on_the_first_call(tmp_path):
    from spark_queue.connector.datasource import SqliteQueueDataSource

    source = SqliteQueueDataSource({"path": str(tmp_path / "none.sqlite"), "topic": "a"})
    reader = source.streamReader(_schema())  # schema() would fail: no store file
    with pytest.raises(StoreNotFoundError, match="does not exist"):
        reader.initialOffset()
    reader.stop()


def _schema():
    from spark_queue.connector.source.source_options import parse_source_options
    from spark_queue.connector.source.source_schema import default_schema

    return default_schema(parse_source_options({"path": "x", "topic": "a"}, streaming=None))
