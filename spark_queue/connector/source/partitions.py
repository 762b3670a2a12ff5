"""Input partitions: how an offset range becomes Spark tasks.

Offsets are dense per topic, so a range ``[start, end)`` holds exactly
``end - start`` rows (less whatever retention removed) and can be split into
exact pieces without reading it. :func:`split_ranges` is pure; the partition
classes are the picklable values Spark ships to executors (planned on the
driver, read in :meth:`read` on an executor).
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from spark_queue.connector.source.read_shape import ReadShape


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    start: int
    end: int  # exclusive

    @property
    def rows(self) -> int:
        return self.end - self.start


@dataclass
class StoreRangePartition(InputPartition):
    """The executor opens the store file and reads ``[start, end)`` of ``topic`` itself.

    ``file_id`` is the driver's ``(st_dev, st_ino)`` of the store file and
    ``driver_host`` its host name: an executor that sees another file (another
    machine, another mount) refuses to read instead of returning wrong rows.
    ``shape`` is the read the planner decided (:class:`ReadShape`).
    """

    topic: str
    start: int
    end: int
    driver_host: str
    file_id: tuple[int, int]
    shape: ReadShape


@dataclass
class RangesPartition(InputPartition):
    """A micro-batch the driver ships with the plan (``latencyMode=auto``), as one partition.

    Spark sends the rows the driver read along with this partition and never asks
    Python to read it; should an executor ever be asked (a pyspark that ships no
    rows), it reads ``ranges`` (``((topic, start, end), ...)``) from the store file
    itself, under the same checks as :class:`StoreRangePartition`.
    """

    ranges: tuple[tuple[str, int, int], ...]
    driver_host: str
    file_id: tuple[int, int]
    shape: ReadShape


@dataclass
class ShippedRangePartition(InputPartition):
    """The driver read ``[start, end)`` of ``topic`` and ships it as Arrow IPC bytes.

    ``arrow_ipc`` holds the store's columns
    (:func:`spark_queue.store.streams.arrow_read.payload_schema`);
    the executor turns them into output rows, in the ``shape`` they were read in.
    Bounded by driver memory and ``spark.driver.maxResultSize``: size micro-batches
    with maxRowsPerTrigger.
    """

    topic: str
    start: int
    end: int
    arrow_ipc: bytes
    shape: ReadShape


#: The smallest piece a default split makes: each Spark task of a Python source pays
#: ~50 ms for its Python worker round trip, about what reading 50,000 rows costs.
MIN_DEFAULT_PARTITION_ROWS = 50_000


def reading_cpus() -> int:
    """CPUs this process may run on: the driver's, where the store file lives.

    The Python planner cannot ask Spark for its default parallelism (it runs in a
    process Spark started, with no SparkContext). What bounds a parallel read of one
    SQLite file is the machine that holds it: executors read the file only when they
    run on that machine (``readPath=auto``), and ``readPath=driver`` reads every
    piece in the planner itself. So a split into this many pieces keeps every core
    of that machine busy, and no more.
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def default_rows_per_partition(total_rows: int, cpus: int) -> int:
    """The ``rowsPerPartition`` used when it is not given: the range shared among
    ``cpus`` tasks, but no piece below :data:`MIN_DEFAULT_PARTITION_ROWS` rows."""
    return max(MIN_DEFAULT_PARTITION_ROWS, -(-total_rows // cpus))


def split_ranges(
    ranges: Mapping[str, tuple[int, int]], rows_per_partition: int, min_partitions: int
) -> list[OffsetRange]:
    """Split per-topic ``[start, end)`` ranges into pieces for Spark tasks.

    Guarantees (``tests/connector/source/test_source_partitions.py``): the pieces cover every
    offset of every range exactly once, in order; no piece is empty or holds
    more than ``rows_per_partition`` rows; there are at least
    ``min(min_partitions, total rows)`` pieces; pieces of one topic differ in
    size by at most one row.
    """
    if rows_per_partition <= 0 or min_partitions <= 0:
        raise ValueError("rows_per_partition and min_partitions must be positive")
    sizes = {t: end - start for t, (start, end) in ranges.items() if end > start}
    counts = {t: -(-rows // rows_per_partition) for t, rows in sizes.items()}
    total_rows = sum(sizes.values())
    wanted = min(min_partitions, total_rows)
    # Give extra pieces to the topic whose pieces are currently largest.
    heap = [(-sizes[t] / counts[t], t) for t in sorted(sizes)]
    heapq.heapify(heap)
    pieces = sum(counts.values())
    while pieces < wanted and heap:
        _, topic = heapq.heappop(heap)
        if counts[topic] < sizes[topic]:
            counts[topic] += 1
            pieces += 1
            heapq.heappush(heap, (-sizes[topic] / counts[topic], topic))
    result = []
    for topic in sorted(sizes):
        start, _ = ranges[topic]
        base, extra = divmod(sizes[topic], counts[topic])
        for index in range(counts[topic]):
            length = base + (1 if index < extra else 0)
            result.append(OffsetRange(topic, start, start + length))
            start += length
    return result
