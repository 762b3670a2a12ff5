"""Defaults and bounds said once, for every entry point: the Python API, the CLI, the
worker and the Spark sink. Imports nothing of spark_queue (only the stdlib's ``_thread``),
so every layer may import it.

A queue's and a topic's own settings (lease, attempts, backoff, idempotency window,
retention, limits) are declared in :mod:`spark_queue.setting_table`, defaults included;
the column defaults of ``sq_queues`` (:mod:`spark_queue.store.file.schema`) say them again
so a queue created by any SQLite client gets them, and ``tests/test_setting_table.py``
holds the two together.
"""

from _thread import TIMEOUT_MAX  # threading's, without importing threading

#: The largest integer SQLite (and so the store) can hold.
MAX_INT64 = 2**63 - 1
#: The store's bound on the times, durations and settings it keeps: a duration is added to
#: epoch milliseconds in SQL (``now + delay_ms``), so it stays below 2**62 and any clock
#: fits beside it in 64 bits.
MAX_STORED = 2**62 - 1
#: The longest a thread can wait at once (``threading.TIMEOUT_MAX``, which
#: ``Event.wait`` and ``Lock.acquire`` refuse beyond), in milliseconds.
MAX_WAIT_MS = int(TIMEOUT_MAX * 1000)

#: The Spark format name (``format("sqliteq")``) and the prefix of every connector message;
#: here so the connector never imports the package face, which imports the connector.
FORMAT_NAME = "sqliteq"

#: ``PRAGMA synchronous`` per connection: ``normal`` in WAL mode survives a process
#: crash without losing a commit, and may lose the last commits on power loss.
#: ``replicated`` is ``normal`` locally, and a write returns only once a replicator
#: (``sqliteq replicate``) has confirmed that the replica holds it.
DURABILITY = "normal"
DURABILITY_LEVELS = ("full", "normal", "off", "replicated")

#: How long a ``durability="replicated"`` write waits for the replicator's confirmation
#: before it raises (the write itself is committed locally by then).
REPLICATED_WAIT_MS = 30_000
#: How often Litestream ships the WAL on its own, and how often the replicator confirms
#: the replicated high-water mark when no replicated write is waiting: each ship is one or
#: more object-store requests (1 s is about 2.6 million PUTs a month while writes flow).
REPLICA_SYNC_INTERVAL_MS = 1_000

#: How long a connection waits for another writer's lock before it raises.
BUSY_TIMEOUT_MS = 5_000
#: The Spark sink's driver commit waits longer: failing it fails the micro-batch, and
#: Spark then reruns all of the batch's tasks.
SINK_BUSY_TIMEOUT_MS = 30_000

#: How long a worker's running jobs may finish after SIGTERM/SIGINT.
WORKER_GRACE_MS = 30_000

#: NDJSON lines per transaction, in ``sqliteq publish`` and ``sqliteq queue add``.
CLI_BATCH_SIZE = 10_000

#: The most rows one maintenance step (retention, dead-letter retention, the TTL sweep)
#: deletes in its write transaction: about 10-30 ms of the write lock on a 2-core VM, far
#: below any writer's busy timeout (docs/file-format.md, "The lock budget").
MAINTENANCE_STEP_ROWS = 10_000

#: The most payload bytes one maintenance step deletes (a larger row goes alone): freeing
#: a row's overflow pages costs about 3.5 ms per MB, so 8 MiB is about 30 ms of the lock.
MAINTENANCE_STEP_BYTES = 8 * 2**20

#: How far in the future a recorded housekeeping time may lie (a run's start, a lease's
#: renewal) before it counts as written by a clock that was ahead and has been set back:
#: such a record is stale, so a clock set back delays housekeeping by this much at most.
CLOCK_SKEW_MS = 300_000

#: ``PRAGMA journal_size_limit`` of every connection: a WAL checkpointed to its end is cut
#: back to this size by the next write, so a burst does not leave its peak size on disk.
WAL_LIMIT_BYTES = 64 * 2**20

#: ``sqliteq check`` warns when a consumer's saved offset keeps events this much older than
#: what the topic's retention keeps (an abandoned consumer holds retention back for good).
HELD_BACK_WARN_MS = 3_600_000

# -- Kafka ---------------------------------------------------------------------------------
#: How long a Kafka command waits for the broker's answer (``--timeout``, ``timeout_s``):
#: long enough for a broker on a loaded machine, short enough that a wrong address fails
#: while the user still watches.
KAFKA_TIMEOUT_MS = 10_000
#: The longest wait a Kafka command accepts: an hour, past any broker restart; a larger
#: value is a unit mistake (seconds given as milliseconds).
KAFKA_TIMEOUT_MAX_MS = 3_600_000

#: How much slower a range read is where no compiled build loads and reads build Arrow in
#: Python, said once for `sqliteq doctor`, the runtime warning and a failing wheel build
#: (hatch_build.py loads this file by path) and checked against the docs
#: (tests/test_docs_bench.py): BENCHMARKS.md's `read_partition` in process, 4.76× the rows
#: path the Python fallback reads at.
PYTHON_READ_SLOWER = "4.8x slower"

#: A streaming query's position under a consumer name holds retention from the query's
#: start, before Spark has checkpointed an offset naming the query (its first batch).
#: Until then the planning process refreshes it every POSITION_REFRESH_MS; a start
#: position left unrefreshed this long (its process died before its first checkpoint,
#: so no restart can ever name it) stops holding retention (docs/reading.md).
UNCONFIRMED_POSITION_HOLD_MS = 60_000
POSITION_REFRESH_MS = 5_000
#: A confirmed position its query has not saved (planned or committed a batch) for this
#: long is *stopped*: it holds neither retention nor the name's offset, so a query whose
#: checkpoint was deleted never holds for good. 7 days, Kafka's
#: ``offsets.retention.minutes`` default, for the same reason (docs/reading.md).
STOPPED_POSITION_HOLD_MS = 7 * 86_400_000

#: The end a streaming query chose for each batch start is kept (sq_planned_batches) so a
#: batch planned again after a power cut tore the checkpoint covers the same range. A cut
#: tears only what the OS had not yet written back (Linux: dirty pages expire after 30 s),
#: so a query's plans are kept ten times that long, and its newest few whatever their age.
PLANNED_BATCH_HOLD_MS = 300_000
PLANNED_BATCHES_KEPT = 4
#: A query reading without a ``consumer`` is named by nothing in the store but its plans: once
#: its newest plan is this old (a query stopped a week), its plans are deleted at the next
#: plan any query records; replayed later, it plans its torn batch afresh (docs/semantics.md).
UNNAMED_PLANS_HOLD_MS = 7 * 86_400_000
