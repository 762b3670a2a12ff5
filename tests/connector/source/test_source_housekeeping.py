"""A streaming query's driver-side planning process lives as long as the query: its readers
start the store's housekeeping there (one Housekeeper per store file and process), so
retention applies itself while a query reads the store. No Spark session: the readers are
called as Spark's driver calls them."""

from __future__ import annotations

import time

from spark_queue.connector.source.simple_reader import SqliteQueueSimpleStreamReader
from spark_queue.connector.source.source_options import parse_source_options
from spark_queue.connector.source.source_schema import default_schema
from spark_queue.connector.source.stream_reader import SqliteQueueStreamReader
from spark_queue.store import keep_housekept


def test_planning_a_micro_batch_keeps_the_store_housekept(store, store_path):
    store.housekeeping.set_interval(1)
    store.topic("clicks").configure(retention_rows=2)
    store.publish_many("clicks", range(10))
    opts = parse_source_options({"path": store_path, "topic": "clicks"}, streaming=True)
    reader = SqliteQueueStreamReader(opts, default_schema(opts))
    reader.latestOffset(reader.initialOffset(), None)
    keeper = keep_housekept(store_path)  # the one the reader started
    simple = SqliteQueueSimpleStreamReader(opts, default_schema(opts))
    simple.read(simple.initialOffset())
    assert keep_housekept(store_path) is keeper and keeper.alive
    try:
        deadline = time.monotonic() + 120  # its first check comes 5 s after its start
        while store.topic("clicks").bounds()[0] != 8:
            assert time.monotonic() < deadline, "retention never applied"
            time.sleep(0.05)
    finally:
        keeper.stop()
