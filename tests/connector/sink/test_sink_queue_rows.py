"""The queue sink's driver side: JSON rows reach the store as the executors encoded them.

No Spark here: the executors' Arrow batches are built by hand, so the test
pins what the driver does with them (no parse and re-encode of each row).
"""

from __future__ import annotations

import pyarrow as pa

from spark_queue.connector.sink.sink_schema import SinkLayout
from spark_queue.connector.sink.writers import _jobs
from spark_queue.store import JSON, QueueRows, Store


def test_json_rows_are_stored_as_the_executors_encoded_them(store: Store) -> None:
    # Text a parse and re-encode would change (spacing, key order, 1.0 vs 1).
    texts = ['{"b": 1.0, "a":[1, 2]}', None, '"text"', '{"z":{"y":null}}']
    batch = pa.RecordBatch.from_pydict({"value": pa.array(texts, pa.string())})
    layout = SinkLayout(target="queue", value_type=JSON)
    commit = store.commit_sink_batch("s", 0, QueueRows("q", _jobs(iter([batch]), layout)))
    assert commit.rows == 4
    with store.write() as conn:
        stored = conn.execute(
            "SELECT value, typeof(value), value_type FROM sq_jobs ORDER BY id"
        ).fetchall()
    assert stored == [
        ('{"b": 1.0, "a":[1, 2]}', "text", 2),
        (None, "null", 0),  # a null value is null, as for every write path
        ('"text"', "text", 2),
        ('{"z":{"y":null}}', "text", 2),
    ]
    claimed = store.queue("q").claim(4)
    assert [job.payload for job in claimed] == [{"b": 1.0, "a": [1, 2]}, None, "text",
                                                {"z": {"y": None}}]
