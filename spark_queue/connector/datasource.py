"""The ``sqliteq`` DataSource: the user manual, and the entry point Spark calls."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark.errors import PySparkNotImplementedError
from pyspark.sql.datasource import DataSource, DataSourceStreamReader
from pyspark.sql.types import StructType

from spark_queue.connector import compat
from spark_queue.connector.source.offsets import check_path_exists
from spark_queue.connector.source.source_options import SourceOptions, parse_source_options
from spark_queue.connector.source.source_schema import check_user_schema, default_schema
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import OptionError, SparkQueueError

# Readers, writers and the store are imported by the methods that use them: Spark
# unpickles this class in a fresh interpreter for every planning process (the
# stream's runner among them, before the first trigger), and each needs one side
# only (BENCHMARKS.md, "Stream start").
if TYPE_CHECKING:
    from spark_queue.connector.sink.sink_options import SinkOptions
    from spark_queue.connector.sink.sink_schema import SinkLayout
    from spark_queue.connector.sink.writers import SqliteQueueBatchWriter, SqliteQueueStreamWriter
    from spark_queue.connector.source.batch_reader import SqliteQueueBatchReader
    from spark_queue.connector.source.simple_reader import SqliteQueueSimpleStreamReader
    from spark_queue.store import TopicSchema

log = logging.getLogger("spark_queue.connector")

_Method = TypeVar("_Method", bound=Callable[..., Any])
_Writer = TypeVar("_Writer")


def _raised_here(method: _Method) -> _Method:
    """Raise the connector's own errors (a bad option, a missing path, a bad schema) from this
    frame, without the frames that found them (``options.py``, ``option_table.py``) or the
    exception they were translated from: pyspark wraps what a data source raises in a
    traceback of its own, and the message is then one frame from its end (issue 34)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except SparkQueueError as exc:
            raise exc.with_traceback(None) from None

    return wrapper  # type: ignore[return-value]



class SqliteQueueDataSource(DataSource):
    r"""Read and write spark_queue store files from Spark: ``format("sqliteq")``.

    Reading
    -------
    ``spark.readStream.format("sqliteq")`` streams topics by offset into
    checkpointed micro-batches; ``spark.read.format("sqliteq")`` reads an
    offset range once::

        (spark.readStream.format("sqliteq")
           .option("path", "/data/app.sqlite").option("topic", "clicks")
           .option("maxRowsPerTrigger", 10000).load())
        spark.read.format("sqliteq").option("topics", "a,b").load("/data/app.sqlite")

    Options (names case-insensitive; an unknown name fails, with the
    closest known name as a hint; every value is validated on the driver: at
    ``load()`` when Spark asks for the default schema, otherwise when the
    query is planned, before any task runs). Kafka's names and forms are
    accepted, so a Kafka pipeline needs only ``format("sqliteq")`` and
    ``kafka.bootstrap.servers`` -> ``path``; Kafka client options that mean
    nothing for a file (``kafka.*``, ``kafkaConsumer.*``, ``fetchOffset.*``,
    ``groupIdPrefix``) are ignored with one logged warning naming them:

    - ``path`` (required): the store file, a path or a ``file:`` URI
      (``file:/local_disk0/app.sqlite``). It must exist; a reader never
      creates one.
    - ``topic`` | ``topics`` (Kafka's ``subscribe``) | ``topicPattern``
      (Kafka's ``subscribePattern``) | ``assign`` (exactly one): one topic, a
      comma list, a regular expression matched against whole topic names, or
      Kafka's ``{"topic": [0]}`` (every topic has one partition, 0; any other
      partition fails naming it). A subscribed topic that does not exist yet
      is read from offset 0 once it appears, so topics created while a
      ``topicPattern`` query runs are picked up from their first event. The
      pattern is a Python ``re`` expression, where Kafka's is Java's:
      ordinary patterns (``topic.*``, ``a|b``, ``[a-z]+``, ``\d``) mean the
      same; Java-only syntax (``\p{Alpha}``, ``\Q...\E``, ``(?<name>...)``)
      fails at ``load()`` with the regex error.
    - ``startingOffsets`` (default ``earliest``): ``earliest`` (the first
      stored event), ``latest`` (streams only), ``committed`` (the offsets
      saved by ``consumer``; earliest for topics it never saved), or JSON
      ``{"topic": offset}`` or Kafka's ``{"topic": {"0": offset}}``, with
      ``-2`` = earliest and ``-1`` = latest; subscribed topics left out start
      at earliest, topics not subscribed are an error. Applies to a new query
      only: a restart resumes from its checkpoint. The default is
      ``earliest``, unlike Kafka's ``latest`` for streams, because a store is
      a durable buffer whose point is to be read in full.
    - ``startingOffsetsByTimestamp``: JSON ``{"topic": {"0": ms}}`` (or
      ``{"topic": ms}``): start each topic at its first event stamped at or
      after that time (``-2`` = earliest, ``-1`` = latest; topics left out
      start at earliest). Takes precedence over ``startingOffsets``.
    - ``startingTimestamp``: the same time for every topic (milliseconds
      since the epoch, or ISO-8601; without a zone it is UTC). Takes
      precedence over both, as in Kafka.
    - ``startingOffsetsByTimestampStrategy`` (default ``latest``): when a
      topic has no event at or after the start time, ``latest`` starts after
      its last event and ``error`` fails naming the topic (Kafka's default is
      ``error``).
    - ``endingOffsets`` (batch reads only, default ``latest``): ``latest`` or
      JSON ``{"topic": offset}`` / ``{"topic": {"0": offset}}`` (exclusive;
      ``-1`` = latest).
    - ``endingOffsetsByTimestamp`` and ``endingTimestamp`` (batch reads
      only): end each topic before its first event stamped at or after the
      time (per topic as JSON, or one time for all; latest when there is no
      such event), with the same precedence as the starting options.
    - ``consumer``: a consumer name. After each micro-batch the source saves
      its end offsets under this name in the store (``commit``), which holds
      retention back and shows lag in ``sqliteq consumers``. Spark's
      checkpoint stays the source of truth: Spark commits a batch only while
      planning the next, so saved offsets trail the checkpoint by up to one
      batch, and a new query with ``startingOffsets=committed`` re-reads at
      most that batch (at-least-once across checkpoints). Batch reads never
      save offsets.
    - ``maxRowsPerTrigger`` (Kafka's ``maxOffsetsPerTrigger``; streams only):
      at most this many rows per micro-batch, shared among topics in
      proportion to their backlog. Respected by ``availableNow`` triggers.
    - ``minRowsPerTrigger`` (Kafka's ``minOffsetsPerTrigger``; streams only)
      and ``maxTriggerDelay`` (default
      ``15m``; ``500ms``, ``2s``, ``15m``, ``1h``): wait until this many rows
      are available, or until ``maxTriggerDelay`` has passed since the last
      micro-batch, whichever comes first (the source keeps the clock).
      ``availableNow`` runs ignore the minimum so they always finish;
      ``once`` triggers read everything.
    - ``failOnDataLoss`` (default ``true``): when retention removed offsets a
      query still needs, fail naming the topic, the requested and the
      earliest offsets; ``false`` logs a warning and continues from the
      earliest offset. The same for a store that went back in time under the
      checkpoint (a restored copy older than it; ``StoreRewoundError``):
      ``false`` goes on from the store's end, or from the checkpoint once the
      store has grown past it (docs/operations.md, "A store older than a
      checkpoint").
    - ``includeHeaders`` (default ``false``): add Kafka's ``headers`` column,
      ``array<struct<key: string, value: binary>>``.
    - ``keyFormat`` / ``valueFormat`` (default ``binary``, as Kafka):
      ``binary`` or ``string`` (UTF-8 text; a binary payload that is not
      UTF-8 then fails naming its offsets).
    - ``valueSchema`` (default ``kafka``): ``kafka`` keeps Kafka's columns
      (or the ``.schema(...)`` given); ``topic`` makes the columns those the
      subscribed topic declared (``store.topic(name).set_schema(ddl)``,
      docs/schemas.md), each value parsed into them as a user schema is, so
      ``load()`` needs no ``.schema(...)``. Once the topic's schema changes
      under a stream, its batches end where the new version starts and the
      next fails with ``SchemaChangedError`` naming both versions and whether
      the change is backward compatible; restarting from the same checkpoint
      reads the new columns (``spark_queue.spark.follow_schema`` restarts it).
    - ``mode`` (default ``FAILFAST``) and ``columnNameOfCorruptRecord``
      (default ``_corrupt_record``), for user schemas: see below.
    - ``rowsPerPartition`` and ``minPartitions`` (default 1): a range is
      split into Spark partitions of at most ``rowsPerPartition`` rows, and
      into at least ``minPartitions`` when it has that many rows. Offsets are
      dense, so splits are exact. Without ``rowsPerPartition`` the range is
      shared among the driver's CPUs (the machine that holds the file, whose
      cores bound a parallel read of it; the planner cannot ask Spark for its
      parallelism), with no partition under 50,000 rows: one task per CPU for
      a large range, one task for a small one.
    - ``readPath`` (default ``auto``): where rows are read. ``executor``:
      executors open the store file themselves (fast; they must run on the
      driver's machine or see its disk through a shared mount). ``driver``:
      the driver reads each range and ships it inside the partitions as
      Arrow IPC, for executors that cannot reach the driver's disk; shipped
      rows pass through driver memory and task serialization, so bound
      batches with ``maxRowsPerTrigger``. ``auto`` is ``executor`` when the
      driver's JVM runs a ``local`` or ``local-cluster`` master (read from the
      JVM's launch: ``--master``, ``spark.master``, ``spark-defaults.conf``)
      and ``driver`` for any other master or one it cannot read (a cluster,
      Databricks), so the default is right on a multi-node cluster
      (docs/cluster.md). An executor asked to open a file it cannot see (not
      the driver's very file: same host, device and inode) fails with one
      line naming this option.
    - ``latencyMode`` (default ``auto``; streams only): ``auto`` reads a
      micro-batch of at most ``lowLatencyMaxRows`` rows (default 10000, and
      at most 16 MiB once read) in the driver's planning process and Spark
      ships the rows with the plan, so no executor Python worker starts for
      it (the lowest latency from publish to visible); a larger micro-batch
      (a backlog) is split into partitions that executors read, for full
      throughput. The choice depends only on the offset range, so a replayed
      batch takes the same path and reads the same rows. ``throughput``
      reads every micro-batch in executor tasks. ``low`` reads every
      micro-batch in the driver's planning process: every row passes through
      that one Python process, so bulk throughput is far lower, and Spark
      reports no latest offset (no lag) for this mode; a batch it replays
      after a restart is read by an executor task, which must reach the file. Rows
      shipped with the plan stay in the driver's memory (Spark's block
      manager) until the batch is done: bounded by ``lowLatencyMaxRows`` in
      ``auto`` mode, by ``maxRowsPerTrigger`` in ``low`` mode.
    - ``lowLatencyMaxRows`` (default 10000; streams only): see
      ``latencyMode``.

    Default schema (Kafka's, so ``format("kafka")`` can be swapped for
    ``format("sqliteq")``): ``key``, ``value`` (binary or string),
    ``topic`` string, ``partition`` int (always 0), ``offset`` long,
    ``timestamp`` timestamp (the event's publish time), ``timestampType``
    int (0, create time), and ``headers`` with ``includeHeaders``.

    User schema: with ``.schema("id LONG, user STRING")`` each value is
    decoded as one JSON object into those columns (extra fields are ignored,
    missing ones are null; a null value gives an all-null row). A value that
    is not one JSON object, or whose fields do not convert to the column
    types, is malformed: ``FAILFAST`` fails the query naming the topic and
    offset; ``PERMISSIVE`` yields nulls and puts the raw text in the
    ``columnNameOfCorruptRecord`` column if the schema has it (a STRING).

    Guarantees: offsets are ``{topic: next_offset}`` in Spark's checkpoint;
    a replayed micro-batch reads exactly the same rows (offsets are dense
    and immutable; only retention removes them, see ``failOnDataLoss``). The
    offsets also carry the store's identity (``@store``) and the fingerprint
    of the last event read per topic (``@last``): a store put back to an
    older copy stops the query instead of being read from positions it no
    longer holds.
    ``availableNow`` reads what existed when the query started, in batches
    that respect ``maxRowsPerTrigger``. ``StreamingQueryProgress`` reports
    the latest offsets per topic (``sources[0].latestOffset``), so lag is
    ``latestOffset - endOffset``. Reads hand Spark Arrow record batches.

    Writing
    -------
    ``df.writeStream.format("sqliteq")`` (append, update and complete output
    modes) and ``df.write.format("sqliteq").mode("append")`` publish rows to
    a topic or enqueue them as jobs::

        (df.writeStream.format("sqliteq")
           .option("path", "/data/app.sqlite").option("topic", "results")
           .option("checkpointLocation", "/data/ckpt/results").start())
        df.write.format("sqliteq").mode("append").option("queue", "jobs").save("/data/app.sqlite")

    Options (names case-insensitive; an unknown name fails with a hint, as on
    the source; ``kafka.*`` client options and ``includeHeaders``, which
    Kafka's sink takes, are ignored with one logged warning: a ``headers``
    column is always written):

    - ``path`` (required): the store file, a path or a ``file:`` URI. It
      must be a store: a path that names none (a typo) fails at start,
      naming ``createStore``, and nothing is created.
    - ``createStore`` (default ``false``): ``true`` creates the store file
      when ``path`` names none (its directory must exist), as the CLI's
      ``--create``.
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
      ``synchronous`` for the commit transaction; ``replicated``: the commit returns
      once the store's replica holds it (``sqliteq replicate``).
    - ``busyTimeoutMs``: how long a commit waits for another writer's lock
      (default 30000).
    - ``replicaWaitMs``: with ``durability=replicated``, how long a commit waits
      for the replica to hold it before the batch fails (default 30000).

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
      metadata, never part of a JSON payload. The store keeps one text
      value per header key: a row whose headers repeat a key, or hold a
      null or non-UTF-8 value, fails the batch naming the key and the row
      (nothing is written), rather than losing a header silently.
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
    skipped: exactly once into the file. One past ``last_batch_id + 1`` is
    refused, writing nothing (``StoreRewoundError``: the store was put back to
    a copy older than the checkpoint; Spark's batch ids never skip a sink).
    Aborted batches write nothing. A
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

    @_raised_here
    def schema(self) -> StructType | str:
        """Driver, at ``load()`` without a user schema: validate the read options; Kafka's
        shape, or with ``valueSchema=topic`` the topic's declared DDL."""
        options = parse_source_options(self.options, streaming=None)
        check_path_exists(options)
        if options.value_schema == "topic":
            from spark_queue.connector.source.topic_columns import declared

            return declared(options)[0]
        return default_schema(options)

    @_raised_here
    def reader(self, schema: StructType) -> SqliteQueueBatchReader:
        """Driver, when a batch read is planned: validate options and schema."""
        from spark_queue.connector.source.batch_reader import SqliteQueueBatchReader

        options = parse_source_options(self.options, streaming=False)
        check_user_schema(schema, options)
        check_path_exists(options)
        return SqliteQueueBatchReader(options, schema)

    @_raised_here
    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """Driver, at query start: validate options and schema (before any task runs).

        The store is opened at the first trigger, not here. ``latencyMode=low``
        wraps the simple reader as pyspark would, but ships replayed batches too
        (declining, so Spark asks :meth:`simpleStreamReader`, only on a pyspark
        without the wrapper).
        """
        try:
            options = self._stream_options(schema)
        except SparkQueueError as exc:
            from spark_queue.connector.source.refused_reader import (
                SqliteQueueRefusedStreamReader,
            )

            return SqliteQueueRefusedStreamReader(exc)
        if options.latency_mode == "low" and compat.SHIPS_ROWS_WITH_PLAN:
            from spark_queue.connector.source.simple_reader import (
                SqliteQueueLowLatencyStreamReader,
                SqliteQueueSimpleStreamReader,
            )

            return SqliteQueueLowLatencyStreamReader(SqliteQueueSimpleStreamReader(options, schema))
        if options.latency_mode == "low":  # pragma: no cover - a pyspark without the wrapper
            raise PySparkNotImplementedError(
                errorClass="NOT_IMPLEMENTED", messageParameters={"feature": "streamReader"}
            )
        if options.latency_mode == "auto":
            from spark_queue.connector.source.auto_reader import SqliteQueueAutoStreamReader

            return SqliteQueueAutoStreamReader(options, schema)
        from spark_queue.connector.source.stream_reader import SqliteQueueStreamReader

        return SqliteQueueStreamReader(options, schema)

    @_raised_here
    def simpleStreamReader(self, schema: StructType) -> SqliteQueueSimpleStreamReader:
        """Driver, at query start with ``latencyMode=low``: validate options and schema."""
        from spark_queue.connector.source.simple_reader import SqliteQueueSimpleStreamReader

        return SqliteQueueSimpleStreamReader(self._stream_options(schema), schema)

    def _stream_options(self, schema: StructType) -> SourceOptions:
        options = parse_source_options(self.options, streaming=True)
        check_user_schema(schema, options)
        check_path_exists(options)
        if options.value_schema == "topic":  # the versions its columns come from
            from spark_queue.connector.source.topic_columns import declared

            options = declared(options, schema.simpleString())[1]
        if not compat.HAS_ADMISSION_CONTROL and options.max_rows_per_trigger is not None:
            log.warning(
                "%s source on pyspark %s: a Trigger.AvailableNow or once run of a Python source "
                "reads ONE micro-batch of at most maxRowsPerTrigger=%d rows before Spark 4.2. "
                "spark_queue.spark.run_available_now(writer) drains the whole backlog in such "
                "batches; processing-time triggers are unaffected.",
                FORMAT_NAME, ".".join(map(str, compat.PYSPARK_VERSION)),
                options.max_rows_per_trigger,
            )
        return options

    @_raised_here
    def writer(self, schema: StructType, overwrite: bool) -> SqliteQueueBatchWriter:
        """Driver, at job start: validate options and schema (fails before any task runs)."""
        from spark_queue.connector.sink.writers import SqliteQueueBatchWriter

        if overwrite:
            raise OptionError(
                f"{FORMAT_NAME} sink supports mode('append') only; got overwrite. Topics are "
                "append-only logs and queues hold live jobs: remove or purge them with the "
                "sqliteq CLI, then append."
            )
        return self._sink_writer(SqliteQueueBatchWriter, schema, streaming=False)

    @_raised_here
    def streamWriter(self, schema: StructType, overwrite: bool) -> SqliteQueueStreamWriter:
        """Driver, each micro-batch: validate options and schema (the first one fails the start).

        ``overwrite`` (complete output mode) appends the whole result, as Kafka's sink does.
        """
        from spark_queue.connector.sink.writers import SqliteQueueStreamWriter

        return self._sink_writer(SqliteQueueStreamWriter, schema, streaming=True)

    def _sink_writer(
        self, writer: Callable[[SinkOptions, SinkLayout, TopicSchema | None], _Writer],
        schema: StructType,
        streaming: bool,
    ) -> _Writer:
        """The sink's options parsed, the schema's layout planned and the target checked,
        for a batch or a streaming ``writer``."""
        from spark_queue.connector.sink.sink_options import parse_sink_options
        from spark_queue.connector.sink.sink_schema import plan_layout
        from spark_queue.connector.sink.writers import check_target

        options = parse_sink_options(self.options, streaming=streaming)
        layout = plan_layout(schema, options)
        return writer(options, layout, check_target(options, layout))
