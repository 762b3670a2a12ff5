"""The sink's options: one table, parsed and validated in one place, on the driver.

``writer()``/``streamWriter()`` call :func:`parse_sink_options` before any
task runs, so a bad option fails the query at start, never in an executor.
Like the source, the sink rejects an unknown option name with a hint, and
accepts Kafka's client options (``kafka.*``) and ``includeHeaders`` (a Kafka
sink writes a ``headers`` column whenever there is one, and so does this one)
with one logged warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from spark_queue.connector.option_table import (
    Option,
    OptionTable,
    boolean,
    choice,
    name_rule,
    non_negative_int,
    positive_int,
    store_path,
)
from spark_queue.defaults import (
    DURABILITY,
    DURABILITY_LEVELS,
    FORMAT_NAME,
    REPLICATED_WAIT_MS,
    SINK_BUSY_TIMEOUT_MS,
)
from spark_queue.errors import OptionError

#: Every option the sink reads (order = docs/writing.md's table order).
SINK_OPTIONS: tuple[Option, ...] = (
    Option("path", store_path, doc_default="(required)",
           doc="the store file, a path or a `file:` URI; it must be a store unless "
           "`createStore` is true"),
    Option("createStore", boolean, default=False, doc_default="false",
           doc="`true` creates the store file when `path` names none (its directory must "
           "exist), as the CLI's `--create`; without it a path that is not a store (a typo) "
           "fails at start and nothing is created"),
    Option("topic", name_rule("topic"),
           doc="publish every row to this topic (created if missing); overrides a `topic` "
           "column"),
    Option("queue", name_rule("queue"),
           doc="enqueue every row as a job (the queue is created with default settings if "
           "missing); excludes `topic`"),
    Option("sinkId", name_rule("sink"), doc_default="the query id",
           doc="the name the sink ledger records batches under; a streaming query's id is "
           "stable across restarts from one checkpoint"),
    Option("batchId", non_negative_int,
           doc="batch writes only, with `sinkId`: skip the write if this id is at or below the "
           "last one committed under `sinkId` (exactly-once `foreachBatch`)"),
    Option("durability", choice(DURABILITY_LEVELS, phrase="one of " + ", ".join(DURABILITY_LEVELS)),
           default=DURABILITY, doc_default=DURABILITY,
           doc="`full`, `normal` or `off`: SQLite `synchronous` for the commit; `replicated`: the "
           "micro-batch commits only once the replica holds it ([Replication](replication.md))"),
    Option("busyTimeoutMs", non_negative_int, default=SINK_BUSY_TIMEOUT_MS,
           doc_default=str(SINK_BUSY_TIMEOUT_MS),
           doc="how long a commit waits for another writer's lock"),
    Option("replicaWaitMs", positive_int, default=REPLICATED_WAIT_MS,
           doc_default=str(REPLICATED_WAIT_MS),
           doc="with `durability=replicated`: how long a commit waits for the replica to hold "
           "it before the batch fails (its rows stay committed locally; the retried batch is "
           "skipped by the ledger once the replica holds them)"),
)
# Spark hands a streaming sink its writeStream options, its own among them
# (DataStreamWriter.queryName() travels as the option "queryName").
ASYNC_PROGRESS = "asyncProgressTrackingEnabled"
SINK_TABLE = OptionTable(
    "sink", SINK_OPTIONS, ignored_names=("includeHeaders",),
    spark_names=("checkpointLocation", "queryName", ASYNC_PROGRESS,
                 "asyncProgressTrackingCheckpointIntervalMs"),
)


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """The sink's options, validated. Picklable: writers carry it to executors and back."""

    path: str
    topic: str | None = None
    queue: str | None = None
    sink_id: str | None = None
    batch_id: int | None = None
    durability: str = DURABILITY
    busy_timeout_ms: int = SINK_BUSY_TIMEOUT_MS
    create_store: bool = False
    replica_wait_ms: int = REPLICATED_WAIT_MS
    # Spark's writeStream checkpointLocation, which it passes to the writer's options: a
    # sink without sinkId records its ledger entry for it (store/sink_checkpoints.py).
    checkpoint_location: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SinkOptions:
        """Validate Spark's option map (keys case-insensitive) for a streaming or batch write."""
        return parse_sink_options(options, streaming=streaming)

    @property
    def target(self) -> str:
        """``"queue"`` when enqueueing, else ``"topic"`` (a fixed topic or a topic column)."""
        return "queue" if self.queue is not None else "topic"


def parse_sink_options(options: Mapping[str, str], *, streaming: bool) -> SinkOptions:
    """Validate ``options`` for a streaming or batch write; OptionError on the first problem."""
    _refuse_async_progress(options)
    given = SINK_TABLE.read(options)
    path = given["path"]
    if not path:
        raise OptionError(
            f"{FORMAT_NAME} sink needs option 'path': the store file to write, e.g. "
            f".option('path', '/data/events.sqlite') or .save('/data/events.sqlite')."
        )
    topic, queue = given["topic"], given["queue"]
    if topic is not None and queue is not None:
        raise OptionError(
            f"{FORMAT_NAME} sink takes option 'topic' (publish) or 'queue' (enqueue), not both; "
            f"got topic={topic!r} and queue={queue!r}."
        )
    sink_id, batch_id = given["sinkId"], given["batchId"]
    if batch_id is not None:
        if streaming:
            raise OptionError(
                f"{FORMAT_NAME} option 'batchId' is for batch writes only; a streaming query "
                "uses Spark's micro-batch ids. Remove it."
            )
        if sink_id is None:
            raise OptionError(
                f"{FORMAT_NAME} option 'batchId' needs option 'sinkId' too: the ledger skips a "
                "batch id already committed under that sink name."
            )
    elif sink_id is not None and not streaming:
        raise OptionError(
            f"{FORMAT_NAME} option 'sinkId' in a batch write needs option 'batchId' too (the "
            "ledger skips a batch id already committed under that sink); remove 'sinkId' "
            "for a one-off write."
        )
    return SinkOptions(
        path=path,
        topic=topic,
        queue=queue,
        sink_id=sink_id,
        batch_id=batch_id,
        durability=given["durability"],
        busy_timeout_ms=given["busyTimeoutMs"],
        create_store=given["createStore"],
        replica_wait_ms=given["replicaWaitMs"],
        checkpoint_location=next((str(value) for key, value in options.items()
                                  if key.lower() == "checkpointlocation"), None)
        if streaming else None,
    )


def _refuse_async_progress(options: Mapping[str, str]) -> None:
    """Async progress tracking is at-least-once: after a crash Spark may replay a batch id
    over a different offset range, and the ledger, which skips batch ids it has, would then
    drop rows. Spark 4.0-4.3 refuse it for this sink at start themselves; this keeps the
    refusal, with its reason, should a Spark allow it."""
    for key, value in options.items():
        if str(key).lower() == ASYNC_PROGRESS.lower() and str(value).strip().lower() == "true":
            raise OptionError(
                f"{FORMAT_NAME} sink refuses {ASYNC_PROGRESS}=true: async progress tracking is "
                "at-least-once (after a crash Spark may replay a batch id over a different "
                "offset range), and this sink's exactly-once ledger skips batch ids it already "
                "committed, so rows would be lost. Remove the option; for low latency use the "
                "source's latencyMode=low (docs/reading.md, \"Latency\")."
            )
