"""What differs between the pyspark versions the connector supports (4.0 to 4.3), in one place.

Every shim names the version that needs it, so dropping a version means
deleting its lines here and nothing else. The rest of the connector imports
these names instead of reaching for version-specific pyspark modules, so
importing the connector never fails on a supported version (an import error
in ``pyspark_sqliteq`` would hide every ``pyspark_*`` data source from
Spark's lookup, not only this one).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pyarrow as pa
import pyspark
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamReader,
    DataSourceStreamWriter,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

PYSPARK_VERSION: tuple[int, ...] = tuple(int(p) for p in pyspark.__version__.split(".")[:2])

# pyspark 4.2 added pyspark.sql.streaming.datasource: read limits handed to
# latestOffset(start, limit), SupportsTriggerAvailableNow and reportLatestOffset.
# Before 4.2 Spark calls latestOffset() with no arguments, never plans an
# AvailableNow run in several batches (it runs one), and reports no latest offset.
try:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxRows,
        ReadMinRows,
        SupportsTriggerAvailableNow,
    )

    HAS_ADMISSION_CONTROL = True
except ImportError:  # pyspark 4.0, 4.1
    HAS_ADMISSION_CONTROL = False
    ReadAllAvailable = ReadMaxRows = ReadMinRows = None  # type: ignore[assignment,misc]

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stands in for the 4.2 mixin; Spark before 4.2 never calls its method."""

        def prepareForTriggerAvailableNow(self) -> None:  # pragma: no cover - 4.2+ only
            raise NotImplementedError

# Rows shipped with the plan, pyspark 4.0-4.3: the driver's streaming source runner
# (pyspark/sql/streaming/python_streaming_source_runner.py, partitions_func) sends a
# micro-batch's rows along with its one partition only for readers that are instances
# of the private _SimpleStreamReaderWrapper (pyspark/sql/datasource_internal.py), asking
# their getCache(start, end); None sends none and executors read the partitions as for
# any reader. The JVM keeps shipped rows in the driver's block manager and the task reads
# them there: no executor Python worker. A pyspark without the class gets the plain
# base: its batches are then all read by executors (the shipped batch's one partition
# reads itself).
#
# Two readers subclass it, and neither can go (tests/connector/source/test_simple_reader.py
# holds the list): each is the only way Spark ships rows with the plan for its mode.
# - source/auto_reader.SqliteQueueAutoStreamReader (latencyMode=auto) overrides every
#   method: it plans like the executor reader and ships a small batch's rows, which no
#   public reader class can ask Spark to do.
# - source/simple_reader.SqliteQueueLowLatencyStreamReader (latencyMode=low) is pyspark's
#   own wrapper of the simple reader but for getCache: a batch replayed after a restart
#   ships too instead of falling to an executor task, which cannot open the file on a
#   cluster. Merging it into the auto reader would change what low mode promises (every
#   batch read by the driver, whatever its size), so it stays a subclass of its own.
if TYPE_CHECKING:  # the type checker reads the 4.x class; the run time may lack it
    from pyspark.sql.datasource_internal import (
        _SimpleStreamReaderWrapper as PlanShippingStreamReader,
    )

    SHIPS_ROWS_WITH_PLAN = True
else:
    try:
        from pyspark.sql import datasource_internal

        PlanShippingStreamReader = datasource_internal._SimpleStreamReaderWrapper
        SHIPS_ROWS_WITH_PLAN = True
    except (ImportError, AttributeError):  # pragma: no cover - a pyspark after 4.3 without it
        PlanShippingStreamReader = DataSourceStreamReader
        SHIPS_ROWS_WITH_PLAN = False

# spark/python_env.py settles the source's shared environment map on the minors it was run
# on (4.0 to 4.2). On 4.3.0 py4j's reflection over SparkEnv's BlockManager, where it reads
# the runner's local dirs, fails in the gateway's thread (NoClassDefFoundError:
# com/google/protobuf/MessageOrBuilder); that connection dies and the session finds no
# 'sqliteq' data source afterwards (the matrix's 4.3 legs, 2026-12-03).
SETTLES_SOURCE_ENV = PYSPARK_VERSION < (4, 3)

__all__ = [
    "CHECKPOINT_MANAGER_CONF", "FILE_SYSTEM_CHECKPOINT_MANAGER", "HAS_ADMISSION_CONTROL",
    "PYSPARK_VERSION", "PlanShippingStreamReader", "ReadAllAvailable", "ReadMaxRows",
    "ReadMinRows", "SETTLES_SOURCE_ENV", "SHIPS_ROWS_WITH_PLAN", "STREAM_ARROW_WRITER_BASES",
    "STREAMING_SOURCE_RUNNER", "SupportsTriggerAvailableNow", "arrow_schema",
    "data_source_exists", "report_latest_offset_of",
]

STREAMING_SOURCE_RUNNER = "pyspark.sql.streaming.python_streaming_source_runner"


class _LatestOffsetOnly:
    """A stand-in that is no _SimpleStreamReaderWrapper, for the runner's report."""

    def __init__(self, reader: object) -> None:
        self.reportLatestOffset = reader.reportLatestOffset  # type: ignore[attr-defined]


def report_latest_offset_of(reader_type: type) -> None:
    """Let readers of ``reader_type`` report their latest offset (lag) to Spark.

    pyspark 4.2-4.3's streaming source runner answers ``reportLatestOffset`` with "none"
    for every _SimpleStreamReaderWrapper (report_latest_offset_func) without asking it.
    Called in that runner process (started as ``python -m`` of the module, so it is
    ``__main__``), this wraps the function the runner's loop looks up on each call, so a
    ``reader_type`` reader is asked as any other reader is; elsewhere it does nothing.
    Before 4.2 there is no such report (the runner has no such function).
    """
    runner = sys.modules.get("__main__")
    if getattr(getattr(runner, "__spec__", None), "name", None) != STREAMING_SOURCE_RUNNER:
        return
    original = getattr(runner, "report_latest_offset_func", None)
    if original is None or getattr(original, "reader_type", None) is reader_type:
        return

    def report_latest_offset_func(reader: object, outfile: object) -> None:
        if isinstance(reader, reader_type):
            reader = _LatestOffsetOnly(reader)
        original(reader, outfile)

    report_latest_offset_func.reader_type = reader_type  # type: ignore[attr-defined]
    runner.report_latest_offset_func = report_latest_offset_func  # type: ignore[union-attr]


# pyspark 4.1 added DataSourceStreamArrowWriter. pyspark 4.0 hands Arrow batches
# to any writer that is a DataSourceArrowWriter, streaming ones included
# (pyspark/sql/worker/write_into_data_source.py), so a streaming writer that is
# both gets Arrow there too.
try:
    from pyspark.sql.datasource import DataSourceStreamArrowWriter

    STREAM_ARROW_WRITER_BASES: tuple[type, ...] = (DataSourceStreamArrowWriter,)
except ImportError:  # pyspark 4.0
    STREAM_ARROW_WRITER_BASES = (DataSourceArrowWriter, DataSourceStreamWriter)


# Checkpoint writes through Hadoop's FileSystem API with an atomic rename: about
# 8 ms per log file instead of ~35 ms through FileContext on a local disk (the
# rename is atomic on local file systems and HDFS, NOT on object stores).
# pyspark 4.1 moved the class into the checkpointing package.
if PYSPARK_VERSION >= (4, 1):
    FILE_SYSTEM_CHECKPOINT_MANAGER = (
        "org.apache.spark.sql.execution.streaming.checkpointing."
        "FileSystemBasedCheckpointFileManager"
    )
else:  # pyspark 4.0
    FILE_SYSTEM_CHECKPOINT_MANAGER = (
        "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager"
    )
CHECKPOINT_MANAGER_CONF = "spark.sql.streaming.checkpointFileManagerClass"


def arrow_schema(schema: StructType) -> pa.Schema:
    """Spark's Arrow schema for ``schema``, timestamps in UTC (what Spark expects back)."""
    if PYSPARK_VERSION >= (4, 2):
        return to_arrow_schema(schema, timezone="UTC")
    # pyspark 4.0, 4.1; mypy reads 4.2's signature, which renamed the keyword.
    return to_arrow_schema(schema, timestamp_utc=True)  # type: ignore[call-arg]


def data_source_exists(spark: object, name: str) -> bool:
    """Whether a classic session already has the Python data source ``name`` (found by Spark's
    lookup of ``pyspark_*`` modules or registered before). pyspark 4.1+ logs a warning when
    ``register`` replaces such a source, and 4.0 refuses. Spark Connect sessions have no JVM
    handle to ask: False, and registering there is harmless."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return False
    try:
        return bool(jsession.sessionState().dataSourceManager().dataSourceExists(name))
    except Exception:  # noqa: BLE001 - a JVM without that method: register as before
        return False
