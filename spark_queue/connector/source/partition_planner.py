"""Plan the input partitions of one offset range (runs on the driver).

Chooses the data path (``readPath``): under ``executor`` and ``auto`` the
partitions carry only offsets and each executor opens the store file; under
``driver`` the driver reads every piece now and ships it as Arrow IPC bytes
inside the partition, for executors that cannot reach the driver's disk.
"""

from __future__ import annotations

import socket

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from spark_queue.connector.source.offsets import Bounds, effective_start
from spark_queue.connector.source.options import SourceOptions
from spark_queue.connector.source.partition_reader import file_identity, payload_format
from spark_queue.connector.source.partitions import (
    ShippedRangePartition,
    StoreRangePartition,
    split_ranges,
)
from spark_queue.connector.source.schema import is_typed
from spark_queue.store import Store


def plan_partitions(
    store: Store,
    options: SourceOptions,
    schema: StructType,
    start: dict[str, int],
    end: dict[str, int],
    bounds: Bounds,
) -> list[InputPartition]:
    """Partitions covering ``[start[t], end[t])`` for every topic in ``end``.

    A topic missing from ``start`` starts at 0. Offsets that retention removed
    raise DataLossError, or are skipped with a warning (failOnDataLoss=false).
    """
    ranges = {}
    for topic, stop in end.items():
        begin = start.get(topic, 0)
        if stop <= begin:
            continue
        earliest = bounds.get(topic, (0, 0))[0]
        begin = effective_start(topic, begin, earliest, options)
        if stop > begin:
            ranges[topic] = (begin, stop)
    pieces = split_ranges(ranges, options.rows_per_partition, options.min_partitions)
    if not pieces:
        return []
    if options.read_path == "driver":
        typed = is_typed(schema, options)
        fmt, headers = payload_format(options, typed), options.include_headers and not typed
        return [
            ShippedRangePartition(
                p.topic, p.start, p.end,
                _ipc_bytes(store.read_arrow_payloads(p.topic, p.start, p.end, fmt, headers)),
            )
            for p in pieces
        ]
    host, ident = socket.gethostname(), file_identity(options.path)
    return [StoreRangePartition(p.topic, p.start, p.end, host, ident) for p in pieces]


def _ipc_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()
