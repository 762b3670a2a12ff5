"""The first micro-batch a stream's planning process reads on the driver (latencyMode=auto)
loads no pandas: pyarrow imports it (~175 ms) on its first conversion of a Python value,
and the query's first batch would wait for it (BENCHMARKS.md, "Stream start")."""

from __future__ import annotations

import subprocess
import sys

from spark_queue.store import Store

FIRST_BATCH = """
import sys
from spark_queue.connector.datasource import SqliteQueueDataSource
source = SqliteQueueDataSource({"path": sys.argv[1], "topic": "t",
                                "startingOffsets": "earliest"})
reader = source.streamReader(source.schema())
start = reader.initialOffset()
end = reader.latestOffset(start, reader.getDefaultReadLimit())
assert reader.partitions(start, end)
batches = list(reader.getCache(start, end))
"""

READ_FIRST_BATCH = FIRST_BATCH + """
assert sum(b.num_rows for b in batches) == 3, batches
assert batches[0].column(2).to_pylist() == ["t"] * 3
print(sorted(m for m in sys.modules if m.split(".")[0] == "pandas")[:3])
"""


def _first_batch_output(tmp_path, script: str) -> str:
    """What ``script`` prints after reading a fresh store's first batch as a stream would."""
    path = str(tmp_path / "s.sqlite")
    with Store(path) as store:
        store.publish_many("t", ["a", b"b", {"c": 1}])
    result = subprocess.run([sys.executable, "-c", script, path],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_first_batch_read_on_the_driver_loads_no_pandas(tmp_path):
    assert _first_batch_output(tmp_path, READ_FIRST_BATCH).strip() == "[]"


READ_KAFKA_SHAPED = FIRST_BATCH + """
print(sorted(m for m in sys.modules if m.startswith("pyarrow.compute"))[:3])
stamps = batches[0].column(5)
print(str(stamps.type), stamps.to_pylist() == sorted(stamps.to_pylist()))
"""


def test_the_first_kafka_shaped_batch_on_the_driver_loads_no_pyarrow_compute(tmp_path):
    # Its import (60-80 ms) would sit between the query's start and its first foreachBatch.
    printed = _first_batch_output(tmp_path, READ_KAFKA_SHAPED)
    assert printed.split("\n")[:2] == ["[]", "timestamp[us, tz=UTC] True"]


def test_kafka_shaped_timestamps_are_the_stored_milliseconds_in_microseconds_on_any_chunking():
    import pyarrow as pa

    from spark_queue.connector.source.arrow_output import _micros

    stamps = [1_700_000_000_123, 0, 1, 2_000_000_000_000]
    whole = pa.array(stamps, pa.int64())
    chunked = pa.chunked_array([whole.slice(0, 1), whole.slice(1, 2), whole.slice(3)])
    for column in (pa.chunked_array([whole]), chunked, pa.chunked_array([whole.slice(1)])):
        got = _micros(column)
        assert got.type == pa.timestamp("us", tz="UTC")
        assert got.cast(pa.int64()).to_pylist() == [ms * 1000 for ms in column.to_pylist()]
