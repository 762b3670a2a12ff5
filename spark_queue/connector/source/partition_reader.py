"""Read offset ranges into Spark's Arrow RecordBatches.

:func:`read_partition` runs in an executor's Python worker (batch reads and
the stream readers' executor path); :func:`read_range` and :func:`read_ranges`
run wherever they are called (the stream readers call them on the driver to
ship a micro-batch with the plan, on a connection they hold or open).
Without a given store they open one inside the call and close it in
``finally``; both read in chunks so memory stays bounded by
``READ_CHUNK_ROWS`` rows per batch whatever the range size.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from spark_queue.connector.compat import arrow_schema
from spark_queue.connector.source.offsets import effective_start, open_source_store
from spark_queue.connector.source.partitions import (
    RangesPartition,
    ShippedRangePartition,
    StoreRangePartition,
)
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.connector.source.source_schema import is_typed
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


def file_identity(path: str) -> tuple[int, int]:
    stat = os.stat(path)
    return (stat.st_dev, stat.st_ino)


def read_partition(
    options: SourceOptions, schema: StructType, partition: InputPartition
) -> Iterator[pa.RecordBatch]:
    """Yield the partition's rows as RecordBatches of Spark's exact Arrow schema."""
    if isinstance(partition, RangesPartition):
        _check_reachable(options, partition)
        yield from read_ranges(options, schema, {t: (b, e) for t, b, e in partition.ranges})
        return
    if isinstance(partition, ShippedRangePartition):
        tables = _shipped_tables(partition)
    elif isinstance(partition, StoreRangePartition):
        _check_reachable(options, partition)
        tables = _store_tables(options, schema, partition.topic, partition.start, partition.end)
    else:  # Spark's placeholder for an empty batch read
        return
    yield from _output_batches(options, schema, partition.topic, tables)


def read_range(
    options: SourceOptions,
    schema: StructType,
    topic: str,
    start: int,
    end: int,
    store: Store | None = None,
    chunk_rows: int = READ_CHUNK_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Rows ``[start, end)`` of ``topic`` as RecordBatches of Spark's Arrow schema, read
    here: on ``store`` if given (left open), else on a connection opened for the call."""
    yield from _output_batches(
        options, schema, topic,
        _store_tables(options, schema, topic, start, end, store, chunk_rows),
    )


def read_ranges(
    options: SourceOptions,
    schema: StructType,
    ranges: dict[str, tuple[int, int]],
    store: Store | None = None,
    chunk_rows: int = READ_CHUNK_ROWS,
) -> Iterator[pa.RecordBatch]:
    """:func:`read_range` of every ``{topic: (start, end)}``, topics in name order, on one
    connection (``store`` if given, else one opened for the call)."""
    own = store is None and bool(ranges)
    if own:
        store = open_source_store(options)
    try:
        for topic in sorted(ranges):
            start, end = ranges[topic]
            yield from read_range(options, schema, topic, start, end, store, chunk_rows)
    finally:
        if own and store is not None:
            store.close()


def _output_batches(
    options: SourceOptions, schema: StructType, topic: str, tables: Iterator[pa.Table]
) -> Iterator[pa.RecordBatch]:
    from spark_queue.connector.source.arrow_output import kafka_batch, typed_batch

    target = arrow_schema(schema)
    decoder = None
    if is_typed(schema, options):
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


def payload_format(options: SourceOptions, typed: bool) -> str:
    """How the store hands key and value over: JSON decoding wants bytes; otherwise
    the value's format (a different key format is cast per column by kafka_batch)."""
    return "string" if options.value_format == "string" and not typed else "binary"


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
    schema: StructType,
    topic: str,
    start: int,
    end: int,
    given: Store | None = None,
    chunk_rows: int = READ_CHUNK_ROWS,
) -> Iterator[pa.Table]:
    typed = is_typed(schema, options)
    fmt, headers = payload_format(options, typed), options.include_headers and not typed
    store = given if given is not None else open_source_store(options)
    try:
        while start < end:
            stop = min(start + chunk_rows, end)
            table = store.read_arrow_payloads(topic, start, stop, fmt, headers)
            got_first = table.column("offset")[0].as_py() if table.num_rows else end
            if got_first != start:
                # Retention removed the front of the range after it was planned.
                earliest = store.earliest_offset(topic)
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
    finally:
        if given is None:
            store.close()


def _shipped_tables(partition: ShippedRangePartition) -> Iterator[pa.Table]:
    # Over the bytes themselves (the columns share their memory, no copy), a table per
    # shipped batch so none is concatenated.
    with pa.ipc.open_stream(pa.py_buffer(partition.arrow_ipc)) as stream:
        for batch in stream:
            yield pa.Table.from_batches([batch])
