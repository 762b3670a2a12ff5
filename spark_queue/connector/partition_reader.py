"""Read one input partition into Arrow RecordBatches (runs in an executor's Python worker).

Shared by the batch and the stream reader. Opens the store inside the call
and closes it in ``finally``; reads the range in chunks so memory stays
bounded by ``READ_CHUNK_ROWS`` rows per batch whatever the partition size.
"""

from __future__ import annotations

import io
import logging
import os
import socket
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from spark_queue.connector.arrow_output import kafka_batch, typed_batch
from spark_queue.connector.json_decode import JsonDecoder
from spark_queue.connector.offsets import effective_start, open_store
from spark_queue.connector.partitions import ShippedRangePartition, StoreRangePartition
from spark_queue.connector.source_options import FORMAT, SourceOptions
from spark_queue.connector.source_schema import is_typed
from spark_queue.errors import DataLossError, StoreError

log = logging.getLogger("spark_queue.connector")

READ_CHUNK_ROWS = 50_000


def file_identity(path: str) -> tuple[int, int]:
    stat = os.stat(path)
    return (stat.st_dev, stat.st_ino)


def read_partition(
    options: SourceOptions, schema: StructType, partition: InputPartition
) -> Iterator[pa.RecordBatch]:
    """Yield the partition's rows as RecordBatches of Spark's exact Arrow schema."""
    typed = is_typed(schema, options)
    if isinstance(partition, ShippedRangePartition):
        tables = _shipped_tables(partition)
    elif isinstance(partition, StoreRangePartition):
        headers = options.include_headers and not typed
        tables = _store_tables(options, partition, payload_format(options, typed), headers)
    else:  # Spark's placeholder for an empty batch read
        return
    target = to_arrow_schema(schema, timezone="UTC")
    decoder = None
    if typed:
        decoder = JsonDecoder(
            target, options.corrupt_record_column, options.mode == "PERMISSIVE", partition.topic
        )
    for table in tables:
        if table.num_rows == 0:
            continue
        if decoder is None:
            yield kafka_batch(table, partition.topic, target)
        else:
            yield typed_batch(table, decoder)


def payload_format(options: SourceOptions, typed: bool) -> str:
    """How the store hands key and value over: JSON decoding wants bytes; otherwise
    the value's format (a different key format is cast per column by kafka_batch)."""
    return "string" if options.value_format == "string" and not typed else "binary"


def _check_reachable(options: SourceOptions, partition: StoreRangePartition) -> None:
    if options.read_path == "executor":
        return  # the user vouched for it (a shared mount, say)
    host = socket.gethostname()
    try:
        same = host == partition.driver_host and file_identity(options.path) == partition.file_id
    except OSError:
        same = False
    if not same:
        raise StoreError(
            f"{FORMAT} source: this executor (host {host!r}) cannot reach the driver's store "
            f"file {options.path!r} (driver host {partition.driver_host!r}); executors read "
            "the file directly under readPath=auto. Set .option('readPath', 'driver') so the "
            "driver ships the rows inside the partitions."
        )


def _store_tables(
    options: SourceOptions, partition: StoreRangePartition, fmt: str, headers: bool
) -> Iterator[pa.Table]:
    _check_reachable(options, partition)
    store = open_store(options)
    try:
        start = partition.start
        while start < partition.end:
            stop = min(start + READ_CHUNK_ROWS, partition.end)
            table = store.read_arrow_payloads(partition.topic, start, stop, fmt, headers)
            got_first = table.column("offset")[0].as_py() if table.num_rows else partition.end
            if got_first != start:
                # Retention removed the front of the range after it was planned.
                earliest = store.earliest_offset(partition.topic)
                resumed = effective_start(partition.topic, start, earliest, options)
                if resumed >= partition.end:
                    break
                if resumed != start:
                    start = resumed
                    continue
                raise DataLossError(  # pragma: no cover - dense offsets make this unreachable
                    f"{FORMAT} source: topic {partition.topic!r} offset {start} is missing."
                )
            yield table
            start += table.num_rows
    finally:
        store.close()


def _shipped_tables(partition: ShippedRangePartition) -> Iterator[pa.Table]:
    with pa.ipc.open_stream(io.BytesIO(partition.arrow_ipc)) as stream:
        yield stream.read_all()
