"""Prometheus text exposition of a store: queue depths, topic offsets, consumer lag.

:func:`render` reads one snapshot of the file; :class:`MetricsServer`
answers ``GET /metrics`` (and ``/``) over HTTP on 127.0.0.1, opening a
read-only store per request so no connection crosses threads.

Metrics (gauges unless said; labels in brackets):

- ``sqliteq_queue_jobs{queue, state}``: jobs ready / leased / delayed / dead
- ``sqliteq_queue_oldest_ready_age_seconds{queue}``: how long the oldest claimable job waited
- ``sqliteq_queue_paused{queue}``: 1 while the queue is paused
- ``sqliteq_queue_throttled{queue}``: 1 while a claim would get nothing because the queue is
  at its ``max_leased`` or out of rate-limit tokens
- ``sqliteq_queue_max_leased{queue}``, ``sqliteq_queue_rate_limit_per_second{queue}``,
  ``sqliteq_queue_rate_tokens{queue}``, ``sqliteq_queue_max_payload_bytes{queue}``,
  ``sqliteq_topic_max_payload_bytes{topic}``: the limits, for queues and topics that set them
- ``sqliteq_queue_acked_total{queue}``, ``sqliteq_queue_failed_total{queue}``,
  ``sqliteq_queue_dead_lettered_total{queue}`` (counters): jobs ever acked, nacked (handler
  failures) and moved to the dead letters, by spark_queue's ack, nack and claim (a client
  writing the tables with its own SQL is not counted)
- ``sqliteq_queue_workers{queue}``: workers registered alive (a heartbeat within their
  last 3 intervals)
- ``sqliteq_topic_latest_offset{topic}``: the next offset the topic will assign
- ``sqliteq_topic_published_total{topic}`` (a counter): events ever published to the topic,
  by spark_queue or by any client through the ``sq_publish`` view (offsets are dense, so it
  is the next offset: retention never lowers it; deleting the topic resets it)
- ``sqliteq_topic_earliest_offset{topic}``: the first offset still stored
- ``sqliteq_consumer_offset{consumer, topic}``: the consumer's saved next offset
- ``sqliteq_consumer_lag{consumer, topic}``: latest minus saved offset (for a name streaming
  queries share, its lowest query's)
- ``sqliteq_consumer_query_lag{consumer, topic, query}``: latest minus one streaming query's
  own position under the name (each holds retention; docs/reading.md, "Consumer names")
- ``sqliteq_mirror_offset{mirror, topic, kafka_topic}``: the store offset of the first event
  a Kafka mirror (``sqliteq kafka export``) has not copied yet, as its hold records it
- ``sqliteq_mirror_lag{mirror, topic, kafka_topic}``: events the mirror has not copied
  (the topic's latest offset minus its position)
- ``sqliteq_mirror_last_delivery_timestamp_seconds{mirror, topic, kafka_topic}``: when Kafka
  last confirmed the mirror's position (a delivered batch, or the export opening the topic)

The operator's gauges of the store itself (:func:`_store_health`; docs/operations.md):

- ``sqliteq_store_file_bytes{store}``, ``sqliteq_store_wal_bytes{store}``: the file and its
  ``-wal`` on disk; ``sqliteq_store_free_bytes{store}``: space left for them (unprivileged)
- ``sqliteq_topic_retention_held_events{topic, consumer}``: events retention would delete
  now that the consumer's saved offset keeps; ``sqliteq_topic_retention_held_seconds{topic,
  consumer}``: how much older the oldest of them is than what retention keeps
- ``sqliteq_retention_last_run_timestamp_seconds{store}``,
  ``sqliteq_retention_last_run_deleted_events{store}``,
  ``sqliteq_retention_last_run_deleted_dead_letters{store}``: the last housekeeping run
  (a start recorded further in the future than ``CLOCK_SKEW_MS`` shows as 0, never);
  ``sqliteq_retention_last_run_problems{store}``: rows it skipped as broken;
  ``sqliteq_housekeeping_interval_seconds{store}``: how often it is due (0: off)
- ``sqliteq_worker_heartbeat_age_seconds{queue, worker, host, pid}``: since each
  registered worker's last heartbeat; a worker that died without stopping (its
  registration expired: 3 heartbeat intervals, at least 1 s, after its last heartbeat)
  leaves the scrape :data:`LOST_WORKER_SCRAPED_MS` (10 minutes) after that, so an alert on
  its age ends within that bound while its replacement works (``sqliteq queue workers``
  still lists it for a day)
- ``sqliteq_replica_lag_events{topic}``, ``sqliteq_replica_lag_seconds``,
  ``sqliteq_replica_last_sync_timestamp_seconds``, ``sqliteq_replica_requests_per_hour``
  (replicated stores only): :mod:`spark_queue.replication.replica_metrics`
"""

from __future__ import annotations

import http.server
import os
import threading
import time
from collections.abc import Iterator

from spark_queue.defaults import CLOCK_SKEW_MS
from spark_queue.replication import replica_metrics
from spark_queue.store import Store, hold_prefix

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Metrics that only grow (Prometheus counters); the others are gauges.
_COUNTERS = frozenset({
    "sqliteq_topic_published_total", "sqliteq_queue_acked_total", "sqliteq_queue_failed_total",
    "sqliteq_queue_dead_lettered_total",
})

_HELP = {
    "sqliteq_queue_jobs": "Jobs in a queue by state (ready, leased, delayed, dead).",
    "sqliteq_queue_oldest_ready_age_seconds": "Age of the oldest claimable job (0 if none).",
    "sqliteq_queue_paused": "1 while the queue is paused (claims return nothing).",
    "sqliteq_queue_throttled": "1 while claims get nothing: the queue is at max_leased or out "
    "of rate-limit tokens.",
    "sqliteq_queue_max_leased": "The most jobs of the queue leased at once.",
    "sqliteq_queue_rate_limit_per_second": "The queue's claim rate limit (jobs per second).",
    "sqliteq_queue_rate_tokens": "Jobs the queue's rate limit would let a claim take now.",
    "sqliteq_queue_max_payload_bytes": "The largest payload the queue accepts.",
    "sqliteq_queue_acked_total": "Jobs of the queue ever acked.",
    "sqliteq_queue_failed_total": "Jobs of the queue ever nacked (handler failures).",
    "sqliteq_queue_dead_lettered_total": "Jobs of the queue ever moved to the dead letters.",
    "sqliteq_queue_workers": "Workers of the queue registered alive (recent heartbeat).",
    "sqliteq_topic_latest_offset": "The next offset a topic will assign.",
    "sqliteq_topic_published_total": "Events ever published to the topic (any writer).",
    "sqliteq_topic_earliest_offset": "The first offset a topic still stores.",
    "sqliteq_consumer_offset": "A consumer's saved next offset.",
    "sqliteq_consumer_lag": "Events a consumer has not read yet (latest - saved offset).",
    "sqliteq_consumer_query_lag": "Events one query under a consumer name has not committed.",
    "sqliteq_topic_max_payload_bytes": "The largest value the topic accepts.",
    **{
        "sqliteq_mirror_offset": "The first store offset a Kafka mirror has not copied.",
        "sqliteq_mirror_lag": "Events a Kafka mirror has not copied (latest - its position).",
        "sqliteq_mirror_last_delivery_timestamp_seconds": "When Kafka last confirmed a "
        "mirror's position (Unix seconds).",
    },
}


_STORE_HELP = {
    "sqliteq_store_file_bytes": "Size of the store file on disk.",
    "sqliteq_store_wal_bytes": "Size of the store's -wal file on disk (0 if none).",
    "sqliteq_store_free_bytes": "Free space an unprivileged writer has on the store's file "
    "system.",
    "sqliteq_topic_retention_held_events": "Events retention would delete now that a "
    "consumer's saved offset keeps.",
    "sqliteq_topic_retention_held_seconds": "How much older the oldest event a consumer keeps "
    "is than the first event retention keeps.",
    "sqliteq_retention_last_run_timestamp_seconds": "When the last housekeeping run started "
    "(0: never).",
    "sqliteq_retention_last_run_deleted_events": "Events the last housekeeping run deleted.",
    "sqliteq_retention_last_run_deleted_dead_letters": "Dead letters the last housekeeping "
    "run deleted.",
    "sqliteq_retention_last_run_problems": "Rows the last housekeeping run skipped because "
    "another client broke their rule (sqliteq housekeeping names them).",
    "sqliteq_housekeeping_interval_seconds": "How often housekeeping is due (0: off).",
    "sqliteq_worker_heartbeat_age_seconds": "Time since a registered worker's last heartbeat.",
}
_HELP.update(_STORE_HELP)
_HELP.update(replica_metrics.HELP)


#: How long a lost worker's heartbeat series stays in the scrape after its registration
#: expired: long enough for SqliteqWorkerSilent (age > 120 s) to fire and be seen, short
#: enough that a worker replaced by systemd's Restart=always stops alerting within it.
LOST_WORKER_SCRAPED_MS = 600_000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _store_health(samples: dict[str, list[str]], store: Store) -> None:
    """The store's own gauges (file, WAL, disk, retention, heartbeats), in ``samples``."""
    where = {"store": store.path}
    wal = store.path + "-wal"
    disk = os.statvfs(os.path.dirname(os.path.abspath(store.path)))
    status = store.housekeeping.status()
    last = status.last_run
    # A start recorded by a clock since set back would hold the "not running" alert off.
    stale = last is not None and last.started_ms > time.time_ns() // 1_000_000 + CLOCK_SKEW_MS
    values = {
        "sqliteq_store_file_bytes": os.path.getsize(store.path),
        "sqliteq_store_wal_bytes": os.path.getsize(wal) if os.path.exists(wal) else 0,
        "sqliteq_store_free_bytes": disk.f_bavail * disk.f_frsize,
        "sqliteq_retention_last_run_timestamp_seconds": 0 if last is None or stale
        else last.started_ms / 1000,
        "sqliteq_retention_last_run_deleted_events": 0 if last is None else last.deleted_events,
        "sqliteq_retention_last_run_deleted_dead_letters": 0 if last is None
        else last.deleted_dead_letters,
        "sqliteq_retention_last_run_problems": 0 if last is None else len(last.problems),
        "sqliteq_housekeeping_interval_seconds": status.interval_ms / 1000,
    }
    for name, value in values.items():
        samples[name].append(_sample(name, where, value))
    for held in store.housekeeping.held_back():
        labels = {"topic": held.topic, "consumer": held.consumer}
        samples["sqliteq_topic_retention_held_events"].append(
            _sample("sqliteq_topic_retention_held_events", labels, held.events))
        samples["sqliteq_topic_retention_held_seconds"].append(
            _sample("sqliteq_topic_retention_held_seconds", labels, held.held_ms / 1000))
    now_ms = _now_ms()
    for config in store.queues():
        for worker in store.queue(config.name).workers():
            if now_ms > worker.expires_ms + LOST_WORKER_SCRAPED_MS:
                continue  # lost long ago: its replacement, or the queue's alerts, speak now
            labels = {"queue": worker.queue, "worker": str(worker.id), "host": worker.host,
                      "pid": str(worker.pid)}
            samples["sqliteq_worker_heartbeat_age_seconds"].append(_sample(
                "sqliteq_worker_heartbeat_age_seconds", labels,
                max(0, now_ms - worker.seen_ms) / 1000))


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _sample(name: str, labels: dict[str, str], value: float) -> str:
    inner = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
    number = repr(float(value)) if isinstance(value, float) else str(int(value))
    return f"{name}{{{inner}}} {number}"


def render(store: Store) -> str:
    """All metrics of ``store`` as Prometheus text, read from one snapshot."""
    samples: dict[str, list[str]] = {name: [] for name in _HELP}
    with store.snapshot():
        for stats in store.queue_stats():
            for state in ("ready", "leased", "delayed", "dead"):
                samples["sqliteq_queue_jobs"].append(
                    _sample(
                        "sqliteq_queue_jobs",
                        {"queue": stats.queue, "state": state},
                        getattr(stats, state),
                    )
                )
            age = (stats.oldest_ready_age_ms or 0) / 1000
            samples["sqliteq_queue_oldest_ready_age_seconds"].append(
                _sample("sqliteq_queue_oldest_ready_age_seconds", {"queue": stats.queue}, age)
            )
        for config in store.queues():
            _queue_controls(samples, store, config)
        for topic in store.topics():
            samples["sqliteq_topic_latest_offset"].append(
                _sample("sqliteq_topic_latest_offset", {"topic": topic.name}, topic.latest)
            )
            samples["sqliteq_topic_published_total"].append(
                _sample("sqliteq_topic_published_total", {"topic": topic.name}, topic.latest)
            )
            samples["sqliteq_topic_earliest_offset"].append(
                _sample("sqliteq_topic_earliest_offset", {"topic": topic.name}, topic.earliest)
            )
            if topic.max_payload_bytes is not None:
                samples["sqliteq_topic_max_payload_bytes"].append(
                    _sample(
                        "sqliteq_topic_max_payload_bytes",
                        {"topic": topic.name},
                        topic.max_payload_bytes,
                    )
                )
        _store_health(samples, store)
        for consumer in store.consumers():
            labels = {"consumer": consumer.consumer, "topic": consumer.topic}
            samples["sqliteq_consumer_offset"].append(
                _sample("sqliteq_consumer_offset", labels, consumer.next_offset)
            )
            samples["sqliteq_consumer_lag"].append(
                _sample("sqliteq_consumer_lag", labels, consumer.lag)
            )
        for position in store.consumer_positions():
            labels = {"consumer": position.consumer, "topic": position.topic,
                      "query": position.reader}
            samples["sqliteq_consumer_query_lag"].append(
                _sample("sqliteq_consumer_query_lag", labels, position.lag)
            )
        _mirror_samples(samples, store)
    for name, labels, value in replica_metrics.samples(store.path):
        samples[name].append(_sample(name, labels, value))
    return "".join(_lines(samples))


def _mirror_samples(samples: dict[str, list[str]], store: Store) -> None:
    """The Kafka mirrors' gauges, from their holds (consumers ``sqliteq.mirror[.<prefix>]``)."""
    for hold in store.consumers():
        prefix = hold_prefix(hold.consumer)
        if prefix is None:
            continue
        labels = {"mirror": hold.consumer, "topic": hold.topic, "kafka_topic": prefix + hold.topic}
        for name, value in (("sqliteq_mirror_offset", hold.next_offset),
                            ("sqliteq_mirror_lag", hold.lag),
                            ("sqliteq_mirror_last_delivery_timestamp_seconds",
                             hold.updated_ms / 1000)):
            samples[name].append(_sample(name, labels, value))


def _queue_controls(samples: dict[str, list[str]], store: Store, config) -> None:
    labels = {"queue": config.name}
    counted = store.queue(config.name).counters()
    for name, value in (("sqliteq_queue_acked_total", counted.acked),
                        ("sqliteq_queue_failed_total", counted.failed),
                        ("sqliteq_queue_dead_lettered_total", counted.dead_lettered)):
        samples[name].append(_sample(name, labels, value))
    alive = sum(w.alive for w in store.queue(config.name).workers())
    samples["sqliteq_queue_workers"].append(_sample("sqliteq_queue_workers", labels, alive))
    admission = store.queue(config.name).admission()
    throttled = admission.held_by is not None and admission.held_by != "paused"
    values = {
        "sqliteq_queue_paused": int(config.paused),
        "sqliteq_queue_throttled": int(throttled),
        "sqliteq_queue_max_leased": config.max_leased,
        "sqliteq_queue_rate_limit_per_second": config.rate_limit_per_s,
        "sqliteq_queue_rate_tokens": admission.rate_tokens,
        "sqliteq_queue_max_payload_bytes": config.max_payload_bytes,
    }
    for name, value in values.items():
        if value is not None:
            samples[name].append(_sample(name, labels, value))


def _lines(samples: dict[str, list[str]]) -> Iterator[str]:
    for name, lines in samples.items():
        kind = "counter" if name in _COUNTERS else "gauge"
        yield f"# HELP {name} {_HELP[name]}\n# TYPE {name} {kind}\n"
        for line in lines:
            yield line + "\n"


def render_path(path: str | os.PathLike[str]) -> str:
    """Open ``path`` read-only, render, close."""
    with Store(path, create=False, readonly=True) as store:
        return render(store)


class MetricsServer(http.server.ThreadingHTTPServer):
    """Serves ``render_path(path)`` at ``/metrics`` and ``/``; ``port=0`` picks a free port."""

    daemon_threads = True

    def __init__(self, path: str | os.PathLike[str], host: str = "127.0.0.1", port: int = 9464):
        self.store_path = os.fspath(path)
        super().__init__((host, port), _MetricsHandler)

    @property
    def port(self) -> int:
        return self.server_address[1]

    def serve_in_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="sq-metrics", daemon=True)
        thread.start()
        return thread


class _MetricsHandler(http.server.BaseHTTPRequestHandler):
    server: MetricsServer

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        if self.path.split("?")[0] not in ("/", "/metrics"):
            self.send_error(404, "metrics are at /metrics")
            return
        try:
            body = render_path(self.server.store_path).encode("utf-8")
        except Exception as exc:  # report on the scrape; keep serving
            self.send_error(500, f"cannot read store: {exc}")
            return
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        import logging

        logging.getLogger("spark_queue.metrics").info("%s " + format, self.address_string(), *args)
