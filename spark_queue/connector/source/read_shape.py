"""What the driver's planning and the executor's read both need, decided once, at planning.

pyspark keeps planning (``plan_data_source_read``, on the driver) apart from the
executor's read; here too :mod:`partition_planner` and :mod:`partition_reader` never
import each other. The planner computes the read's :class:`ReadShape` once per query
and carries it inside every partition, so an executor reads what the driver planned
and ships: the same payload format, the same headers, the same decoding. The file's
identity is stamped by the planner and compared by the executor.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pyspark.sql.types import StructType

from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.connector.source.source_schema import is_typed


@dataclass(frozen=True)
class ReadShape:
    """How the store hands a range over and how its rows become Spark's.

    ``payload_format`` is ``"string"`` or ``"binary"`` (JSON decoding wants bytes;
    otherwise the value's format, a different key format being cast per column);
    ``include_headers`` whether the headers column is read; ``typed`` whether the
    output is the user's typed columns (decoded from JSON) or Kafka's shape.
    Picklable: it rides inside the partitions Spark ships to executors.
    """

    payload_format: str
    include_headers: bool
    typed: bool


def read_shape(options: SourceOptions, schema: StructType) -> ReadShape:
    typed = is_typed(schema, options)
    return ReadShape(
        payload_format="string" if options.value_format == "string" and not typed else "binary",
        include_headers=options.include_headers and not typed,
        typed=typed,
    )


def file_identity(path: str) -> tuple[int, int]:
    """``(st_dev, st_ino)`` of the store file: the planner stamps it in a partition, the
    executor refuses to read a file whose identity differs (another machine, another mount)."""
    stat = os.stat(path)
    return (stat.st_dev, stat.st_ino)
