"""The ``sqliteq`` DataSource: the user manual, and the entry point Spark calls."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from spark_queue import FORMAT_NAME
from spark_queue.connector.sink_options import SinkOptions
from spark_queue.connector.sink_schema import plan_layout
from spark_queue.connector.writers import SqliteQueueBatchWriter, SqliteQueueStreamWriter
from spark_queue.errors import OptionError


class SqliteQueueDataSource(DataSource):
    """Read and write spark_queue store files from Spark: ``format("sqliteq")``.

    Reading
    -------
    (source manual: to be written with the source)

    Writing
    -------
    ``df.writeStream.format("sqliteq")`` (append, update and complete output
    modes) and ``df.write.format("sqliteq").mode("append")`` publish rows to
    a topic or enqueue them as jobs::

        (df.writeStream.format("sqliteq")
           .option("path", "/data/app.sqlite").option("topic", "results")
           .option("checkpointLocation", "/data/ckpt/results").start())
        df.write.format("sqliteq").mode("append").option("queue", "jobs").save("/data/app.sqlite")

    Options (names case-insensitive):

    - ``path`` (required): the store file; created if missing.
    - ``topic``: publish every row to this topic (created if missing). It
      overrides a ``topic`` column, as with Kafka.
    - ``queue``: enqueue every row as a job (the queue is created with its
      default settings if missing). ``topic`` and ``queue`` exclude each
      other; with neither, a string ``topic`` column routes each row.
    - ``sinkId``: the name the sink ledger records batches under. Default for
      a streaming query: its query id, which is stable across restarts from
      one checkpoint. Give one when the checkpoint may be replaced; a new
      checkpoint under an old ``sinkId`` restarts at batch 0, which the
      ledger would skip: use a new ``sinkId`` with a new checkpoint.
    - ``batchId``: batch writes only, together with ``sinkId``: the write is
      skipped if this id is at or below the last one committed under
      ``sinkId``. This makes ``foreachBatch(lambda df, i: df.write...
      .option("sinkId", "s").option("batchId", i).save())`` exactly once.
    - ``durability``: ``full``, ``normal`` (default) or ``off``, SQLite's
      ``synchronous`` for the commit transaction.
    - ``busyTimeoutMs``: how long a commit waits for another writer's lock
      (default 30000).

    Columns:

    - ``value`` (string or binary) is the payload, stored as text or bytes.
      Without a ``value`` column each row becomes one JSON object of its
      other columns (dates and timestamps as ISO-8601 text, decimals as
      strings, NaN/Infinity as strings, nulls kept), stored as JSON. Binary
      columns, maps with non-string keys, intervals and variants have no
      JSON form and fail at start.
    - Publishing: ``key`` (string or binary), ``headers``
      (``map<string,string>`` or Kafka's ``array<struct<key,value>>`` with
      string or binary UTF-8 values) and ``topic`` (string) are event
      metadata, never part of a JSON payload.
    - Enqueueing: ``priority``, ``delay_ms``, ``max_attempts``, ``ttl_ms``
      (integer types) and ``idempotency_key`` (string) set the job's
      properties and are never part of a JSON payload. Null means the
      default (priority 0, no delay, the queue's max attempts, no TTL, no
      key). A duplicate idempotency key, within a batch or against any job
      the queue holds (queued, leased or dead), keeps the original job.
    - Any other column is ignored when a ``value`` column is present.

    Schema problems (no column to write, a ``value``, ``key``, ``headers``,
    ``topic`` or queue column of the wrong type, a column with no JSON form)
    fail when the query or job starts, naming the column.

    Guarantees: each task packs its rows (encoded, as Arrow IPC) into its
    commit message; the driver's ``commit`` writes every row of the batch and
    the sink-ledger entry ``sq_sink_commits(sink_id, last_batch_id, rows)``
    in ONE SQLite transaction, so readers see all of a batch or none of it.
    A streaming batch whose id is at or below ``last_batch_id`` (a replay
    after a crash between the sink's commit and Spark's commit log) is
    skipped: exactly once into the file. Aborted batches write nothing. A
    batch write commits the whole job in one transaction. Every micro-batch
    passes through driver memory once (one copy, as Arrow): size batches
    with the source's rate limit and ``spark.driver.maxResultSize``.

    Save modes: ``append`` only. ``overwrite`` fails at start (topics are
    append-only logs and queues hold live work; delete them with the
    ``sqliteq`` CLI instead); Spark itself rejects ``ignore`` and
    ``errorifexists`` for Python data sources. In streaming, the complete
    output mode appends the whole result table on every trigger, as Kafka's
    sink does.
    """

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def writer(self, schema: StructType, overwrite: bool) -> SqliteQueueBatchWriter:
        """Driver, at job start: validate options and schema (fails before any task runs)."""
        if overwrite:
            raise OptionError(
                f"{FORMAT_NAME} sink supports mode('append') only; got overwrite. Topics are "
                "append-only logs and queues hold live jobs: remove or purge them with the "
                "sqliteq CLI, then append."
            )
        options = SinkOptions.parse(self.options, streaming=False)
        return SqliteQueueBatchWriter(options, plan_layout(schema, options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> SqliteQueueStreamWriter:
        """Driver, each micro-batch: validate options and schema (the first one fails the start).

        ``overwrite`` (complete output mode) appends the whole result, as Kafka's sink does.
        """
        options = SinkOptions.parse(self.options, streaming=True)
        return SqliteQueueStreamWriter(options, plan_layout(schema, options))
