"""The store: one SQLite file holding topics (append-only logs) and queues.

This package imports only apsw and pyarrow, never pyspark: it is the library
a producer service or a worker uses on its own.

``__all__`` is the user's face: the nouns a caller holds (a store, its topics and queues,
what their methods return) and the value types. :data:`_PROJECT_NAMES` are importable here
too, for the project's own layers (the connector, the CLI, the worker, the Kafka wing, the
benchmarks), which reach the store through this package only (``tests/test_layers.py``):
plumbing that may change in any release.
"""

from spark_queue.defaults import DURABILITY_LEVELS
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.backup import BackupSource, backup_file
from spark_queue.store.file.codec import BYTES, JSON, TEXT, Encoded
from spark_queue.store.file.identity import store_id
from spark_queue.store.file.names import MAX_NAME_LENGTH, validate_name
from spark_queue.store.file.replica_mark import ReplicaStatus
from spark_queue.store.file.replicator_lease import GaveUp, ReplicatorRecord, replicator_running
from spark_queue.store.floor.housekeeping import (
    HeldBack,
    Housekeeper,
    Housekeeping,
    HousekeepingRun,
    HousekeepingStatus,
    keep_housekept,
)
from spark_queue.store.floor.sinks import QueueRows, SinkCommit, SinkRows, TopicRows
from spark_queue.store.floor.transaction import Transaction
from spark_queue.store.maintenance import CheckReport, check_file
from spark_queue.store.producers.producer import Producer
from spark_queue.store.queues.controls import Admission
from spark_queue.store.queues.queue import Queue
from spark_queue.store.queues.queue_admin import JobInfo, QueueCounters, QueueStats
from spark_queue.store.queues.queue_config import QueueConfig
from spark_queue.store.queues.queue_jobs import Job, LeaseResult, NackResult, NewJob
from spark_queue.store.queues.queue_workers import WorkerInfo
from spark_queue.store.replica_cycles import ReplicaCycles, replica_status, replication_warnings
from spark_queue.store.store import Store
from spark_queue.store.streams.columnar import ReadPath, read_path
from spark_queue.store.streams.consumer_offsets import ConsumerInfo
from spark_queue.store.streams.consumer_positions import PositionInfo
from spark_queue.store.streams.fingerprints import Fingerprint, event_fingerprints
from spark_queue.store.streams.mirror_copies import CopyMark, CopyOpened, MirrorCopies
from spark_queue.store.streams.mirrors import hold_name, hold_prefix
from spark_queue.store.streams.planned_batches import planned_end, record_planned_end
from spark_queue.store.streams.quarantine import QuarantinedEvent, Replayed, quarantine_totals
from spark_queue.store.streams.retention import PruneResult
from spark_queue.store.streams.topic import Topic
from spark_queue.store.streams.topic_admin import TopicDeleted
from spark_queue.store.streams.topic_log import EncodedChunk, Record
from spark_queue.store.streams.topic_reads import Event, TopicInfo
from spark_queue.store.streams.topic_schemas import (
    CheckedAgainst,
    Quarantined,
    TopicSchema,
    current_in_file,
)

__all__ = [
    "BYTES",
    "DURABILITY_LEVELS",
    "JSON",
    "TEXT",
    "Admission",
    "CheckReport",
    "ConsumerInfo",
    "Event",
    "Fingerprint",
    "GaveUp",
    "HeldBack",
    "Housekeeping",
    "HousekeepingRun",
    "HousekeepingStatus",
    "Job",
    "JobInfo",
    "LeaseResult",
    "NackResult",
    "NewJob",
    "PositionInfo",
    "Producer",
    "PruneResult",
    "Quarantined",
    "QuarantinedEvent",
    "Queue",
    "QueueConfig",
    "QueueCounters",
    "QueueStats",
    "ReadPath",
    "Record",
    "Replayed",
    "ReplicaStatus",
    "ReplicatorRecord",
    "Store",
    "Topic",
    "TopicDeleted",
    "TopicInfo",
    "TopicSchema",
    "Transaction",
    "WorkerInfo",
    "backup_file",
    "check_file",
    "event_fingerprints",
    "read_path",
    "replica_status",
    "replicator_running",
    "store_id",
]

#: The plumbing the project's own layers import from here (see the module docstring).
_PROJECT_NAMES = (
    BackupSource, CheckedAgainst, CopyMark, CopyOpened, Encoded, EncodedChunk, Housekeeper,
    MAX_NAME_LENGTH, current_in_file,
    MirrorCopies, QueueRows, ReplicaCycles, SinkCommit, SinkRows, TopicRows, check_int,
    hold_name, hold_prefix, keep_housekept, planned_end, quarantine_totals, record_planned_end,
    replication_warnings, validate_name,
)
