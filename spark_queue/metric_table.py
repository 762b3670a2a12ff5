"""Every metric ``sqliteq metrics`` shows, declared once: its name, type, label names and help
text, in the order the exposition writes them. Imports nothing, so every layer may read it.

What reads it: :mod:`spark_queue.metrics` (the store's gauges and counters, the text format,
``--serve``) and :mod:`spark_queue.replication.replica_metrics` (the replica's gauges); each
sample names its :class:`Metric` and gives the labels by name. The names, labels, label order
and help texts are a contract: the alert rules (``conf/prometheus/sqliteq-alerts.yml``) and
users' dashboards name them, and ``tests/fixtures/metrics_exposition.txt`` holds the text as
it was before this table, so a change here shows up as a failing test.

Why a table and not ``prometheus_client`` (measured on a store of 200 topics, consumers and
queues: 5,308 samples): its text writer sorts every sample's label names, which reorders the
labels of 7 families (1,060 series, e.g. the heartbeat's ``queue, worker, host, pid``), and
writes every value as a float (``3.0``, ``6.7216584704e+10``); it took 19.5 ms to write what
:class:`spark_queue.metrics.Exposition` writes in 6.5 ms (the whole scrape, reads included,
is 25 ms), and its import adds about 50 ms to each ``sqliteq`` start, for a runtime
dependency the package does not otherwise need.
"""

from __future__ import annotations

from typing import NamedTuple


class Metric(NamedTuple):
    """One metric family. ``kind`` is ``gauge`` or ``counter`` (only grows; its name ends in
    ``_total``); ``labels`` are written in this order on every sample."""

    name: str
    kind: str
    labels: tuple[str, ...]
    help: str


def _gauge(name: str, labels: tuple[str, ...], text: str) -> Metric:
    return Metric(name, "gauge", labels, text)


def _counter(name: str, labels: tuple[str, ...], text: str) -> Metric:
    return Metric(name, "counter", labels, text)


QUEUE = ("queue",)
TOPIC = ("topic",)
STORE = ("store",)
MIRROR = ("mirror", "topic", "kafka_topic")
REPLICA = ("store", "replica")

# -- queues: the gauges of each queue, and (counted by spark_queue's own ack, nack and claim;
# a client writing the tables with its own SQL is not counted) the jobs it ever finished ----
QUEUE_JOBS = _gauge("sqliteq_queue_jobs", ("queue", "state"),
                    "Jobs in a queue by state (ready, leased, delayed, dead).")
QUEUE_OLDEST_READY_AGE = _gauge("sqliteq_queue_oldest_ready_age_seconds", QUEUE,
                                "Age of the oldest claimable job (0 if none).")
QUEUE_PAUSED = _gauge("sqliteq_queue_paused", QUEUE,
                      "1 while the queue is paused (claims return nothing).")
QUEUE_THROTTLED = _gauge("sqliteq_queue_throttled", QUEUE,
                         "1 while claims get nothing: the queue is at max_leased or out "
                         "of rate-limit tokens.")
# The limits, for the queues that set them.
QUEUE_MAX_LEASED = _gauge("sqliteq_queue_max_leased", QUEUE,
                          "The most jobs of the queue leased at once.")
QUEUE_RATE_LIMIT = _gauge("sqliteq_queue_rate_limit_per_second", QUEUE,
                          "The queue's claim rate limit (jobs per second).")
QUEUE_RATE_TOKENS = _gauge("sqliteq_queue_rate_tokens", QUEUE,
                           "Jobs the queue's rate limit would let a claim take now.")
QUEUE_MAX_PAYLOAD = _gauge("sqliteq_queue_max_payload_bytes", QUEUE,
                           "The largest payload the queue accepts.")
QUEUE_ACKED = _counter("sqliteq_queue_acked_total", QUEUE, "Jobs of the queue ever acked.")
QUEUE_FAILED = _counter("sqliteq_queue_failed_total", QUEUE,
                        "Jobs of the queue ever nacked (handler failures).")
QUEUE_DEAD_LETTERED = _counter("sqliteq_queue_dead_lettered_total", QUEUE,
                               "Jobs of the queue ever moved to the dead letters.")
# Registered workers with a heartbeat within their last 3 intervals.
QUEUE_WORKERS = _gauge("sqliteq_queue_workers", QUEUE,
                       "Workers of the queue registered alive (recent heartbeat).")

# -- topics and consumers -------------------------------------------------------------------
TOPIC_LATEST = _gauge("sqliteq_topic_latest_offset", TOPIC,
                      "The next offset a topic will assign.")
# By spark_queue or any client through the sq_publish view. Offsets are dense, so it is the
# latest offset: retention never lowers it; deleting the topic resets it.
TOPIC_PUBLISHED = _counter("sqliteq_topic_published_total", TOPIC,
                           "Events ever published to the topic (any writer).")
TOPIC_EARLIEST = _gauge("sqliteq_topic_earliest_offset", TOPIC,
                        "The first offset a topic still stores.")
CONSUMER_OFFSET = _gauge("sqliteq_consumer_offset", ("consumer", "topic"),
                         "A consumer's saved next offset.")
# For a name streaming queries share, its lowest query's.
CONSUMER_LAG = _gauge("sqliteq_consumer_lag", ("consumer", "topic"),
                      "Events a consumer has not read yet (latest - saved offset).")
# Latest minus one query's own position under the name: each holds retention
# (docs/reading.md, "Consumer names").
CONSUMER_QUERY_LAG = _gauge("sqliteq_consumer_query_lag", ("consumer", "topic", "query"),
                            "Events one query under a consumer name has not committed.")
# A query whose checkpoint was deleted never saves again: past STOPPED_POSITION_HOLD_MS
# (7 days) its position holds nothing (docs/reading.md, "Consumer names").
CONSUMER_QUERY_SAVED_AGE = _gauge(
    "sqliteq_consumer_query_saved_age_seconds", ("consumer", "topic", "query"),
    "Seconds since one query under a consumer name last saved its position.")
TOPIC_MAX_PAYLOAD = _gauge("sqliteq_topic_max_payload_bytes", TOPIC,
                           "The largest value the topic accepts.")
# Counted by every writer, the sq_publish trigger included; purging the quarantine keeps it.
# Written for each topic whose schema quarantines (0 from then on), and any that ever did.
TOPIC_QUARANTINED = _counter("sqliteq_topic_quarantined_total", TOPIC,
                             "Events the topic's schema kept out, into its quarantine.")

# -- Kafka mirrors (sqliteq kafka export), from their holds ---------------------------------
MIRROR_OFFSET = _gauge("sqliteq_mirror_offset", MIRROR,
                       "The first store offset a Kafka mirror has not copied.")
MIRROR_LAG = _gauge("sqliteq_mirror_lag", MIRROR,
                    "Events a Kafka mirror has not copied (latest - its position).")
# A delivered batch, or the export opening the topic.
MIRROR_LAST_DELIVERY = _gauge("sqliteq_mirror_last_delivery_timestamp_seconds", MIRROR,
                              "When Kafka last confirmed a mirror's position (Unix seconds).")

# -- the store itself, for its operator (docs/operations.md) --------------------------------
STORE_FILE = _gauge("sqliteq_store_file_bytes", STORE, "Size of the store file on disk.")
STORE_WAL = _gauge("sqliteq_store_wal_bytes", STORE,
                   "Size of the store's -wal file on disk (0 if none).")
STORE_FREE = _gauge("sqliteq_store_free_bytes", STORE,
                    "Free space an unprivileged writer has on the store's file system.")
RETENTION_HELD_EVENTS = _gauge("sqliteq_topic_retention_held_events", ("topic", "consumer"),
                               "Events retention would delete now that a consumer's saved "
                               "offset keeps.")
RETENTION_HELD_AGE = _gauge("sqliteq_topic_retention_held_seconds", ("topic", "consumer"),
                            "How much older the oldest event a consumer keeps is than the "
                            "first event retention keeps.")
# A start recorded further in the future than CLOCK_SKEW_MS shows as 0 (never).
HOUSEKEEPING_LAST_RUN = _gauge("sqliteq_retention_last_run_timestamp_seconds", STORE,
                               "When the last housekeeping run started (0: never).")
HOUSEKEEPING_DELETED_EVENTS = _gauge("sqliteq_retention_last_run_deleted_events", STORE,
                                     "Events the last housekeeping run deleted.")
HOUSEKEEPING_DELETED_DEAD = _gauge("sqliteq_retention_last_run_deleted_dead_letters", STORE,
                                   "Dead letters the last housekeeping run deleted.")
HOUSEKEEPING_PROBLEMS = _gauge("sqliteq_retention_last_run_problems", STORE,
                               "Rows the last housekeeping run skipped because another client "
                               "broke their rule (sqliteq housekeeping names them).")
HOUSEKEEPING_INTERVAL = _gauge("sqliteq_housekeeping_interval_seconds", STORE,
                               "How often housekeeping is due (0: off).")
# A lost worker's series leaves the scrape metrics.LOST_WORKER_SCRAPED_MS after its
# registration expired.
WORKER_HEARTBEAT_AGE = _gauge("sqliteq_worker_heartbeat_age_seconds",
                              ("queue", "worker", "host", "pid"),
                              "Time since a registered worker's last heartbeat.")

# -- a replicated store's replica (spark_queue.replication.replica_metrics) -----------------
# Readers do not see these events yet.
REPLICA_LAG_EVENTS = _gauge("sqliteq_replica_lag_events", (*REPLICA, "topic"),
                            "Events published but not yet confirmed in the replica.")
REPLICA_LAG_AGE = _gauge("sqliteq_replica_lag_seconds", REPLICA,
                         "Time since the last confirmed sync while events wait for one "
                         "(0: the replica holds everything).")
REPLICA_LAST_SYNC = _gauge("sqliteq_replica_last_sync_timestamp_seconds", REPLICA,
                           "When the replicator last confirmed the replica holds the store "
                           "(0: never).")
# Each LTX file is at least one object-store request (the bill); compaction adds a few.
REPLICA_REQUESTS = _gauge("sqliteq_replica_requests_per_hour", REPLICA,
                          "LTX files shipped in the last 5 minutes, per hour: object-store "
                          "requests.")

#: Every metric, in the order of the exposition: each family's HELP and TYPE are written even
#: when it has no sample.
METRICS: tuple[Metric, ...] = (
    QUEUE_JOBS, QUEUE_OLDEST_READY_AGE, QUEUE_PAUSED, QUEUE_THROTTLED, QUEUE_MAX_LEASED,
    QUEUE_RATE_LIMIT, QUEUE_RATE_TOKENS, QUEUE_MAX_PAYLOAD, QUEUE_ACKED, QUEUE_FAILED,
    QUEUE_DEAD_LETTERED, QUEUE_WORKERS,
    TOPIC_LATEST, TOPIC_PUBLISHED, TOPIC_EARLIEST, CONSUMER_OFFSET, CONSUMER_LAG,
    CONSUMER_QUERY_LAG, CONSUMER_QUERY_SAVED_AGE, TOPIC_MAX_PAYLOAD, TOPIC_QUARANTINED,
    MIRROR_OFFSET, MIRROR_LAG, MIRROR_LAST_DELIVERY,
    STORE_FILE, STORE_WAL, STORE_FREE, RETENTION_HELD_EVENTS, RETENTION_HELD_AGE,
    HOUSEKEEPING_LAST_RUN, HOUSEKEEPING_DELETED_EVENTS, HOUSEKEEPING_DELETED_DEAD,
    HOUSEKEEPING_PROBLEMS, HOUSEKEEPING_INTERVAL, WORKER_HEARTBEAT_AGE,
    REPLICA_LAG_EVENTS, REPLICA_LAG_AGE, REPLICA_LAST_SYNC, REPLICA_REQUESTS,
)
