"""Plan the input partitions of one offset range (runs on the driver).

Chooses the data path (``readPath``): under ``executor`` and ``auto`` the
partitions carry only offsets and each executor opens the store file; under
``driver`` the driver reads every piece now (:mod:`driver_read`) and ships
it as Arrow IPC bytes inside the partition, for executors that cannot reach
the driver's disk.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from spark_queue.connector.source.driver_read import shipped_pieces
from spark_queue.connector.source.offsets import Bounds, effective_start
from spark_queue.connector.source.partitions import (
    OffsetRange,
    ShippedRangePartition,
    StoreRangePartition,
    default_rows_per_partition,
    reading_cpus,
    split_ranges,
)
from spark_queue.connector.source.placement import executors_share_driver_disk
from spark_queue.connector.source.read_shape import ReadShape, file_identity, read_shape
from spark_queue.connector.source.source_options import SourceOptions

if TYPE_CHECKING:
    from spark_queue.store import Store


#: The most Arrow IPC bytes one shipped partition carries. Each rides inside its task,
#: and Spark refuses a task larger than spark.rpc.message.maxSize (128 MiB by default).
SHIPPED_PARTITION_MAX_BYTES = 64 * 1024 * 1024

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
    return plan_range_partitions(
        store, options, schema, planned_ranges(options, start, end, bounds)
    )


def plan_range_partitions(
    store: Store,
    options: SourceOptions,
    schema: StructType,
    ranges: dict[str, tuple[int, int]],
) -> list[InputPartition]:
    """Partitions covering ``{topic: (begin, stop)}`` (from :func:`planned_ranges`), each
    carrying the read's shape, computed here once."""
    pieces = split_ranges(ranges, rows_per_partition(options, ranges), options.min_partitions)
    if not pieces:
        return []
    shape = read_shape(options, schema)
    if ships_rows(options):
        return _shipped_partitions(store, options, pieces, shape)
    host, ident = socket.gethostname(), file_identity(options.path)
    return [StoreRangePartition(p.topic, p.start, p.end, host, ident, shape) for p in pieces]


def _shipped_partitions(
    store: Store, options: SourceOptions, pieces: list[OffsetRange], shape: ReadShape
) -> list[InputPartition]:
    """Each piece read and shipped whole; a piece whose bytes pass
    :data:`SHIPPED_PARTITION_MAX_BYTES` is halved (offsets are dense: exactly) and shipped
    as two, down to one row."""
    partitions: list[InputPartition] = []
    shipped = shipped_pieces(store, options, pieces, shape.payload_format,
                             shape.include_headers)
    for piece, data in zip(pieces, shipped, strict=True):
        if len(data) > SHIPPED_PARTITION_MAX_BYTES and piece.rows > 1:
            middle = piece.start + piece.rows // 2
            halves = [OffsetRange(piece.topic, piece.start, middle),
                      OffsetRange(piece.topic, middle, piece.end)]
            partitions.extend(_shipped_partitions(store, options, halves, shape))
        else:
            partitions.append(
                ShippedRangePartition(piece.topic, piece.start, piece.end, data, shape))
    return partitions


def ships_rows(options: SourceOptions) -> bool:
    """Whether the driver reads the ranges and ships them (``readPath``; ``auto`` asks
    :mod:`placement` whether executors run on the driver's machine)."""
    if options.read_path == "auto":
        return not executors_share_driver_disk()
    return options.read_path == "driver"


def planned_ranges(
    options: SourceOptions, start: dict[str, int], end: dict[str, int], bounds: Bounds
) -> dict[str, tuple[int, int]]:
    """``{topic: (begin, stop)}`` left to read of ``[start, end)``: empty ranges dropped,
    a front that retention removed skipped or a DataLossError (``effective_start``)."""
    ranges = {}
    for topic in sorted(end):
        begin, stop = start.get(topic, 0), end[topic]
        if stop <= begin:
            continue
        begin = effective_start(topic, begin, bounds.get(topic, (0, 0))[0], options)
        if stop > begin:
            ranges[topic] = (begin, stop)
    return ranges


def rows_per_partition(options: SourceOptions, ranges: dict[str, tuple[int, int]]) -> int:
    """``rowsPerPartition`` if given, else derived from the range and the driver's CPUs."""
    if options.rows_per_partition is not None:
        return options.rows_per_partition
    total = sum(stop - begin for begin, stop in ranges.values())
    return default_rows_per_partition(total, reading_cpus())

