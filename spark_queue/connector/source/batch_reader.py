"""The batch reader: ``spark.read.format("sqliteq")`` over one offset range.

``partitions()`` runs on the driver when Spark plans the query: it resolves
``startingOffsets`` / ``startingTimestamp`` and ``endingOffsets`` against
the store at that moment (one snapshot). ``read()`` runs on executors.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from spark_queue.connector.source.offsets import (
    ending_offsets,
    require_named_topics,
    starting_offsets,
    subscribed_bounds,
    task_store,
)
from spark_queue.connector.source.partition_planner import plan_partitions
from spark_queue.connector.source.partition_reader import read_partition
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import OptionError


class SqliteQueueBatchReader(DataSourceReader):
    """Reads ``[startingOffsets, endingOffsets)`` of every subscribed topic."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        # On a store this process kept from its last planning (Spark reuses its Python
        # workers): each opening parses the file's schema, ~2 ms since its triggers grew.
        with task_store(self.options) as store, store.snapshot():
            bounds = subscribed_bounds(store, self.options)
            require_named_topics(store, self.options, bounds)
            start = starting_offsets(store, self.options, bounds)
            end = ending_offsets(self.options, bounds, store)
            for topic, stop in end.items():
                if stop < start.get(topic, 0):
                    raise OptionError(
                        f"{FORMAT_NAME} source: for topic {topic!r} the ending offset {stop} "
                        f"is below the starting offset {start.get(topic, 0)}; "
                        "endingOffsets must be at or after startingOffsets."
                    )
            return plan_partitions(store, self.options, self.schema, start, end, bounds)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.options, self.schema, partition)
