"""The store: one SQLite file holding topics (append-only logs) and queues.

This package imports only apsw and pyarrow, never pyspark: it is the library
a producer service or a worker uses on its own.
"""

from spark_queue.store.codec import BYTES, JSON, TEXT
from spark_queue.store.connection import DURABILITY_LEVELS
from spark_queue.store.consumers import ConsumerInfo
from spark_queue.store.core import Store
from spark_queue.store.maintenance import CheckReport, check_file
from spark_queue.store.names import MAX_NAME_LENGTH, validate_name
from spark_queue.store.producer import Producer
from spark_queue.store.queue_admin import JobInfo, QueueStats
from spark_queue.store.queue_config import QueueConfig
from spark_queue.store.queue_controls import Admission
from spark_queue.store.queue_handle import Queue
from spark_queue.store.queues import Job, LeaseResult, NackResult, NewJob, enqueue_rows
from spark_queue.store.retention import PruneResult
from spark_queue.store.sinks import SinkCommit
from spark_queue.store.topic_admin import TopicDeleted
from spark_queue.store.topics import EncodedChunk, Event, Record, TopicInfo

__all__ = [
    "BYTES",
    "MAX_NAME_LENGTH",
    "DURABILITY_LEVELS",
    "JSON",
    "TEXT",
    "Admission",
    "CheckReport",
    "ConsumerInfo",
    "EncodedChunk",
    "Event",
    "Job",
    "JobInfo",
    "LeaseResult",
    "NackResult",
    "NewJob",
    "Producer",
    "PruneResult",
    "Queue",
    "QueueConfig",
    "QueueStats",
    "Record",
    "SinkCommit",
    "Store",
    "TopicDeleted",
    "TopicInfo",
    "check_file",
    "enqueue_rows",
    "validate_name",
]
