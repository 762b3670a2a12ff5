"""Read offset ranges into Spark's Arrow RecordBatches.

:func:`read_partition` runs in an executor's Python worker (batch reads and
the stream readers' executor path), in the shape the planner decided and the
partition carries (:mod:`read_shape`; this module never imports the planner);
:func:`range_batches` and :func:`ranges_batches` run wherever they are called
(the stream readers call them on the driver to ship a micro-batch with the
plan, on a connection they hold or open).
Without a given store they read on the one this process keeps for its tasks
(:func:`task_store`); both read in chunks so memory stays bounded by
``READ_CHUNK_ROWS`` rows per batch whatever the range size.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from spark_queue.connector.compat import arrow_schema
from spark_queue.connector.source.offsets import effective_start, task_store
from spark_queue.connector.source.partitions import (
    RangesPartition,
    ShippedRangePartition,
    StoreRangePartition,
)
from spark_queue.connector.source.read_shape import ReadShape, file_identity
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import DataLossError, StoreError

if TYPE_CHECKING:
    from spark_queue.store import Store

log = logging.getLogger("spark_queue.connector")

#: Rows per read and per batch handed to Spark: Spark's own Arrow batch size
#: (spark.sql.execution.arrow.maxRecordsPerBatch). Larger reads allocate buffers past
#: the C allocator's reuse threshold and fault in fresh memory for each: 500,000 rows of
#: 100 bytes read in 10,000-row steps took 105 ms, in 50,000-row steps 155 ms.
READ_CHUNK_ROWS = 10_000


def read_partition(
    options: SourceOptions, schema: StructType, partition: InputPartition
) -> Iterator[pa.RecordBatch]:
    """Yield the partition's rows as RecordBatches of Spark's exact Arrow schema, in the
    shape the planner put in the partition."""
    if isinstance(partition, RangesPartition):
        _check_reachable(options, partition)
        yield from ranges_batches(options, schema, partition.shape,
                                  {t: (b, e) for t, b, e in partition.ranges})
        return
    if isinstance(partition, ShippedRangePartition):
        tables = _shipped_tables(partition)
    elif isinstance(partition, StoreRangePartition):
        _check_reachable(options, partition)
        tables = _store_tables(options, partition.shape, partition.topic, partition.start,
                               partition.end)
    else:  # Spark's placeholder for an empty batch read
        return
    yield from _output_batches(options, schema, partition.shape, partition.topic, tables)


def range_batches(
    options: SourceOptions,
    schema: StructType,
    shape: ReadShape,
    topic: str,
    start: int,
    end: int,
    store: Store | None = None,
    chunk_rows: int = READ_CHUNK_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Rows ``[start, end)`` of ``topic`` as RecordBatches of Spark's Arrow schema, read
    here: on ``store`` if given (left open), else on a connection opened for the call."""
    yield from _output_batches(
        options, schema, shape, topic,
        _store_tables(options, shape, topic, start, end, store, chunk_rows),
    )


def ranges_batches(
    options: SourceOptions,
    schema: StructType,
    shape: ReadShape,
    ranges: dict[str, tuple[int, int]],
    store: Store | None = None,
    chunk_rows: int = READ_CHUNK_ROWS,
) -> Iterator[pa.RecordBatch]:
    """:func:`range_batches` of every ``{topic: (start, end)}``, topics in name order, on one
    connection (``store`` if given, else one opened for the call)."""
    if store is None and ranges:
        with task_store(options) as held:
            yield from ranges_batches(options, schema, shape, ranges, held, chunk_rows)
        return
    for topic in sorted(ranges):
        start, end = ranges[topic]
        yield from range_batches(options, schema, shape, topic, start, end, store, chunk_rows)


def _output_batches(
    options: SourceOptions, schema: StructType, shape: ReadShape, topic: str,
    tables: Iterator[pa.Table],
) -> Iterator[pa.RecordBatch]:
    from spark_queue.connector.source.arrow_output import kafka_batch, typed_batch

    target = arrow_schema(schema)
    decoder = None
    if shape.typed:
        # Only a typed read imports it: it loads pyarrow.compute (60-80 ms), which
        # the stream's planning process would otherwise pay before its first batch
        # reaches foreachBatch (BENCHMARKS.md, "Stream start").
        from spark_queue.connector.source.json_decode import JsonDecoder

        decoder = JsonDecoder(
            target, options.corrupt_record_column, options.mode == "PERMISSIVE", topic
        )
    for table in tables:
        if table.num_rows == 0:
            continue
        if decoder is None:
            yield kafka_batch(table, topic, target)
        else:
            yield typed_batch(table, decoder)


def _check_reachable(
    options: SourceOptions, partition: StoreRangePartition | RangesPartition
) -> None:
    if options.read_path == "executor":
        return  # the user vouched for it (a shared mount, say)
    host = socket.gethostname()
    try:
        same = host == partition.driver_host and file_identity(options.path) == partition.file_id
    except OSError:
        same = False
    if not same:
        raise StoreError(
            f"{FORMAT_NAME} source: this executor (host {host!r}) cannot reach the driver's store "
            f"file {options.path!r} (driver host {partition.driver_host!r}); executors read "
            "the file directly under readPath=auto. Set .option('readPath', 'driver') so the "
            "driver ships the rows inside the partitions."
        )


def _store_tables(
    options: SourceOptions,
    shape: ReadShape,
    topic: str,
    start: int,
    end: int,
    given: Store | None = None,
    chunk_rows: int = READ_CHUNK_ROWS,
) -> Iterator[pa.Table]:
    if given is None:
        with task_store(options) as held:
            yield from _store_tables(options, shape, topic, start, end, held, chunk_rows)
        return
    store = given
    while start < end:
        stop = min(start + chunk_rows, end)
        table = store.read_arrow_payloads(topic, start, stop, shape.payload_format,
                                          shape.include_headers)
        got_first = table.column("offset")[0].as_py() if table.num_rows else end
        if got_first != start:
            # Retention removed the front of the range after it was planned.
            earliest = store.topic(topic).earliest_offset()
            resumed = effective_start(topic, start, earliest, options)
            if resumed >= end:
                break
            if resumed != start:
                start = resumed
                continue
            raise DataLossError(  # pragma: no cover - dense offsets make this unreachable
                f"{FORMAT_NAME} source: topic {topic!r} offset {start} is missing."
            )
        yield table
        start += table.num_rows


def _shipped_tables(partition: ShippedRangePartition) -> Iterator[pa.Table]:
    # Over the bytes themselves (the columns share their memory, no copy), a table per
    # shipped batch so none is concatenated.
    with pa.ipc.open_stream(pa.py_buffer(partition.arrow_ipc)) as stream:
        for batch in stream:
            yield pa.Table.from_batches([batch])
