"""Where a :class:`~spark_queue.testing.StreamTest` writes, and how it reads the rows back.

``"topic"`` (the default): a sqliteq topic of the test's store, read back with
``Store.read``; ``"queue"``: a queue of that store, read back with ``Store.queue(...)``
(``"topic:NAME"``/``"queue:NAME"`` name them); ``"memory"``: Spark's memory sink
(``spark.table``); ``"parquet"``/``"delta"``: a table in the test's directory, Delta where the
session has it. Every sink gives rows as dicts of the query's output columns.

The last batch: the sqliteq sinks and the memory sink keep rows in commit order, so a batch
is the last ``numOutputRows`` rows its progress reports; the parquet sink's own log lists a
batch's files. Delta writes neither, so ``check_last_batch`` refuses it.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spark_queue.errors import OptionError
from spark_queue.store import Store

KINDS = ("topic", "queue", "memory", "parquet", "delta")
#: Names of the sink's topic or queue (the memory sink's table) when the test names none.
DEFAULT_NAME = "streamtest_out"
#: The columns a topic sink stores as the event's key, headers and route, beside its value;
#: a queue sink's job properties (spark_queue.connector.sink.sink_schema keeps these lists).
TOPIC_META = ("topic", "key", "headers")
JOB_FIELDS = ("priority", "delay_ms", "idempotency_key", "max_attempts", "ttl_ms")


@dataclass(frozen=True)
class Sink:
    """One sink of a test: ``kind`` (one of :data:`KINDS`) and its topic, queue or table."""

    kind: str
    name: str
    directory: str  # the parquet or delta table's directory (the test's own)

    @classmethod
    def parse(cls, sink: str, workdir: str) -> Sink:
        kind, _, name = sink.partition(":")
        if kind not in KINDS or (name and kind not in ("topic", "queue", "memory")):
            raise OptionError(
                f"StreamTest: sink must be one of {', '.join(KINDS)} (topic, queue and memory "
                f"may name theirs, 'queue:jobs'); got {sink!r}.")
        return cls(kind, name or DEFAULT_NAME, os.path.join(workdir, "table"))

    def start(self, df: Any, store: Store, checkpoint: str, output_mode: str) -> Any:
        """Start ``df``'s streaming query into this sink; return the StreamingQuery."""
        writer = (df.writeStream.outputMode(output_mode)
                  .option("checkpointLocation", checkpoint))
        if self.kind in ("topic", "queue"):
            writer = writer.format("sqliteq").option("path", store.path).option(self.kind,
                                                                                 self.name)
        elif self.kind == "memory":
            writer = writer.format("memory").queryName(self.name)
        else:
            writer = writer.format(self.kind).option("path", self.directory)
        _activate(df.sparkSession)
        return writer.start()


    def rows(self, spark: Any, store: Store, columns: SinkColumns) -> list[dict[str, Any]]:
        """Every row the sink holds, in commit order where the sink keeps one."""
        if self.kind == "topic":
            if not store.topic(self.name).exists():
                return []
            return [topic_row(event, columns) for event in store.read(self.name)]
        if self.kind == "queue":
            queue = store.queue(self.name)
            if not queue.exists():
                return []
            jobs = sorted(queue.peek(_jobs_held(queue)), key=lambda job: job.id)
            return [job_row(job, columns) for job in jobs]
        return [row.asDict(recursive=True) for row in self._table(spark).collect()]

    def last_batch(self, spark: Any, store: Store, columns: SinkColumns, batch_id: int,
                   output_rows: int) -> list[dict[str, Any]]:
        """The rows batch ``batch_id`` wrote (``output_rows`` of them, as Spark reported)."""
        if self.kind == "delta":
            raise OptionError(
                "StreamTest.check_last_batch: the delta sink does not say which rows a batch "
                "wrote; use check_answer, or sink='memory' (or 'topic') for this test.")
        if self.kind == "parquet":
            files = batch_files(self.directory, batch_id)
            if not files:
                return []
            return [row.asDict(recursive=True)
                    for row in spark.read.parquet(*files).collect()]
        rows = self.rows(spark, store, columns)
        return rows[len(rows) - output_rows:] if output_rows > 0 else []

    def _table(self, spark: Any) -> Any:
        if self.kind == "memory":
            return spark.table(self.name)
        if not os.path.isdir(os.path.join(self.directory, "_spark_metadata")) and \
                not os.path.isdir(os.path.join(self.directory, "_delta_log")):
            return spark.createDataFrame([], "value STRING").limit(0)
        return spark.read.format(self.kind).load(self.directory)


def _jobs_held(queue: Any) -> int:
    stats = queue.stats()
    return max(1, stats.ready + stats.leased + stats.delayed + stats.dead)


#: ``{column: Spark type name}`` of the query's output, in order (``DataType.typeName()``).
SinkColumns = dict[str, str]


def typed(value: Any, type_name: str) -> Any:
    """A value the sqliteq sink stored as JSON text, as Spark collects it: a timestamp as
    a naive datetime in local time, a date as a date (the memory and table sinks agree)."""
    if not isinstance(value, str):
        return value
    if type_name == "timestamp":
        stamp = datetime.datetime.fromisoformat(value)
        return stamp.astimezone().replace(tzinfo=None) if stamp.tzinfo else stamp
    if type_name == "timestamp_ntz":
        return datetime.datetime.fromisoformat(value)
    if type_name == "date":
        return datetime.date.fromisoformat(value)
    return value


def topic_row(event: Any, columns: SinkColumns) -> dict[str, Any]:
    """An event the sqliteq sink stored, as the output row it came from (a ``topic`` column
    routed nothing: the test's sink topic overrides it)."""
    return output_row(columns, event.value, {"key": event.key, "headers": event.headers},
                      TOPIC_META)


def job_row(job: Any, columns: SinkColumns) -> dict[str, Any]:
    """A job the sqliteq sink enqueued, as the output row it came from, with the job
    properties the store keeps (priority, idempotency_key, max_attempts)."""
    kept = {field: getattr(job, field) for field in ("priority", "idempotency_key",
                                                     "max_attempts")}
    return output_row(columns, job.payload, kept, JOB_FIELDS)


def output_row(columns: SinkColumns, payload: Any, meta: Mapping[str, Any],
               not_payload: tuple[str, ...]) -> dict[str, Any]:
    """A stored payload (with what the store keeps beside it, ``meta``) as the row the
    sink was given: the ``value`` column's value, or the row's other columns from its JSON."""
    value_mode = any(column.lower() == "value" for column in columns)
    row: dict[str, Any] = {}
    for column, type_name in columns.items():
        lowered = column.lower()
        if lowered in meta:
            row[column] = meta[lowered]
        elif lowered in not_payload:
            continue
        elif not value_mode:
            row[column] = typed(payload_field(payload, column), type_name)
        elif lowered == "value":
            row[column] = payload
    return row


def payload_field(payload: Any, column: str) -> Any:
    if isinstance(payload, (str, bytes)):
        payload = json.loads(payload)
    return payload.get(column) if isinstance(payload, Mapping) else None


def batch_files(directory: str, batch_id: int) -> list[str]:
    """The files the parquet sink wrote in ``batch_id``, from its ``_spark_metadata`` log.
    A compacted entry (``N.compact``) lists every file so far: the batch's own are those
    no entry before it, back to the previous compacted one, lists."""
    own, compact = listed(directory, batch_id)
    if not compact:
        return own
    before: set[str] = set()
    for batch in range(batch_id - 1, -1, -1):
        files, was_compact = listed(directory, batch)
        before.update(files)
        if was_compact:
            break
    return [path for path in own if path not in before]


def listed(directory: str, batch: int) -> tuple[list[str], bool]:
    """The files entry ``batch`` of the parquet sink's log lists, and whether it is compacted."""
    log = os.path.join(directory, "_spark_metadata")
    for name, compact in ((str(batch), False), (f"{batch}.compact", True)):
        path = os.path.join(log, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as entry:
                lines = entry.read().splitlines()[1:]  # the first line is the log's version
            return [json.loads(line)["path"] for line in lines if line.strip()], compact
    return [], False


def _activate(spark: Any) -> None:
    """Make ``spark`` the active session of the JVM thread py4j runs ``start()`` on: Spark
    looks a Python data source up there, and a py4j thread that last served another
    session (a test before, a thread of the user's) fails with DATA_SOURCE_NOT_FOUND
    (seen in the project's full suite). Spark Connect has no JVM here: nothing to do."""
    jvm, session = getattr(spark, "_jvm", None), getattr(spark, "_jsparkSession", None)
    if jvm is not None and session is not None:
        jvm.org.apache.spark.sql.SparkSession.setActiveSession(session)
