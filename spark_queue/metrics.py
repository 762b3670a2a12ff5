"""Prometheus text exposition of a store: queue depths, topic offsets, consumer lag, the
store's own health, Kafka mirrors and the replica.

:func:`render` reads one snapshot of the file; :class:`MetricsServer`
answers ``GET /metrics`` (and ``/``) over HTTP on 127.0.0.1, opening a
read-only store per request so no connection crosses threads.

Each metric (name, type, labels, help) is declared once, in :mod:`spark_queue.metric_table`;
this module reads the values and writes them, with :class:`Exposition`, in the text format.
"""

from __future__ import annotations

import http.server
import os
import threading
import time

from spark_queue import metric_table as table
from spark_queue.defaults import CLOCK_SKEW_MS
from spark_queue.metric_table import METRICS, Metric
from spark_queue.replication import replica_metrics
from spark_queue.store import QueueConfig, Store, hold_prefix, quarantine_totals

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: How long a lost worker's heartbeat series stays in the scrape after its registration
#: expired: long enough for SqliteqWorkerSilent (age > 120 s) to fire and be seen, short
#: enough that a worker replaced by systemd's Restart=always stops alerting within it.
LOST_WORKER_SCRAPED_MS = 600_000


class Exposition:
    """Samples of :data:`~spark_queue.metric_table.METRICS`, written as Prometheus text
    (version 0.0.4) in the table's order: each family's HELP and TYPE, then its samples in
    the order they were added. Labels are written in the order the table declares them."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {metric.name: [] for metric in METRICS}

    def add(self, metric: Metric, value: float, **labels: str) -> None:
        """One sample of ``metric``; ``labels`` must be exactly the metric's label names."""
        if labels.keys() != set(metric.labels):
            raise TypeError(f"{metric.name} takes the labels {', '.join(metric.labels)}; "
                            f"got {', '.join(labels) or 'none'}")
        inner = ",".join([f'{k}="{_label(labels[k])}"' for k in metric.labels])
        number = repr(float(value)) if isinstance(value, float) else str(int(value))
        self._lines[metric.name].append(f"{metric.name}{{{inner}}} {number}\n")

    def text(self) -> str:
        return "".join(
            f"# HELP {metric.name} {metric.help}\n# TYPE {metric.name} {metric.kind}\n"
            + "".join(self._lines[metric.name])
            for metric in METRICS
        )


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def render(store: Store) -> str:
    """All metrics of ``store`` as Prometheus text, read from one snapshot."""
    out = Exposition()
    with store.snapshot():
        for stats in store.queue_stats():
            for state in ("ready", "leased", "delayed", "dead"):
                out.add(table.QUEUE_JOBS, getattr(stats, state), queue=stats.queue, state=state)
            out.add(table.QUEUE_OLDEST_READY_AGE, (stats.oldest_ready_age_ms or 0) / 1000,
                    queue=stats.queue)
        for config in store.queues():
            _queue_controls(out, store, config)
        for topic in store.topics():
            out.add(table.TOPIC_LATEST, topic.latest, topic=topic.name)
            out.add(table.TOPIC_PUBLISHED, topic.latest, topic=topic.name)
            out.add(table.TOPIC_EARLIEST, topic.earliest, topic=topic.name)
            if topic.max_payload_bytes is not None:
                out.add(table.TOPIC_MAX_PAYLOAD, topic.max_payload_bytes, topic=topic.name)
        for name, total in quarantine_totals(store).items():
            out.add(table.TOPIC_QUARANTINED, total, topic=name)
        _store_health(out, store)
        for consumer in store.consumers():
            out.add(table.CONSUMER_OFFSET, consumer.next_offset, consumer=consumer.consumer,
                    topic=consumer.topic)
            out.add(table.CONSUMER_LAG, consumer.lag, consumer=consumer.consumer,
                    topic=consumer.topic)
        now = store.file.now_ms()
        positions = store.consumer_positions()
        for position in positions:
            out.add(table.CONSUMER_QUERY_LAG, position.lag, consumer=position.consumer,
                    topic=position.topic, query=position.reader)
        for position in positions:
            out.add(table.CONSUMER_QUERY_SAVED_AGE, max(0, now - position.updated_ms) / 1000,
                    consumer=position.consumer, topic=position.topic, query=position.reader)
        _mirror_samples(out, store)
    for metric, labels, value in replica_metrics.samples(store.path):
        out.add(metric, value, **labels)
    return out.text()


def _queue_controls(out: Exposition, store: Store, config: QueueConfig) -> None:
    queue = store.queue(config.name)
    counted = queue.counters()
    out.add(table.QUEUE_ACKED, counted.acked, queue=config.name)
    out.add(table.QUEUE_FAILED, counted.failed, queue=config.name)
    out.add(table.QUEUE_DEAD_LETTERED, counted.dead_lettered, queue=config.name)
    out.add(table.QUEUE_WORKERS, sum(w.alive for w in queue.workers()), queue=config.name)
    admission = queue.admission()
    throttled = admission.held_by is not None and admission.held_by != "paused"
    limits: tuple[tuple[Metric, float | None], ...] = (
        (table.QUEUE_PAUSED, int(config.paused)),
        (table.QUEUE_THROTTLED, int(throttled)),
        (table.QUEUE_MAX_LEASED, config.max_leased),
        (table.QUEUE_RATE_LIMIT, config.rate_limit_per_s),
        (table.QUEUE_RATE_TOKENS, admission.rate_tokens),
        (table.QUEUE_MAX_PAYLOAD, config.max_payload_bytes),
    )
    for metric, value in limits:
        if value is not None:  # a limit the queue does not set has no sample
            out.add(metric, value, queue=config.name)


def _store_health(out: Exposition, store: Store) -> None:
    """The store's own gauges (file, WAL, disk, retention, heartbeats)."""
    wal = store.path + "-wal"
    disk = os.statvfs(os.path.dirname(os.path.abspath(store.path)))
    status = store.housekeeping.status()
    last = status.last_run
    # A start recorded by a clock since set back would hold the "not running" alert off.
    stale = last is not None and last.started_ms > time.time_ns() // 1_000_000 + CLOCK_SKEW_MS
    gauges: tuple[tuple[Metric, float], ...] = (
        (table.STORE_FILE, os.path.getsize(store.path)),
        (table.STORE_WAL, os.path.getsize(wal) if os.path.exists(wal) else 0),
        (table.STORE_FREE, disk.f_bavail * disk.f_frsize),
        (table.HOUSEKEEPING_LAST_RUN, 0 if last is None or stale else last.started_ms / 1000),
        (table.HOUSEKEEPING_DELETED_EVENTS, 0 if last is None else last.deleted_events),
        (table.HOUSEKEEPING_DELETED_DEAD, 0 if last is None else last.deleted_dead_letters),
        (table.HOUSEKEEPING_PROBLEMS, 0 if last is None else len(last.problems)),
        (table.HOUSEKEEPING_INTERVAL, status.interval_ms / 1000),
    )
    for metric, value in gauges:
        out.add(metric, value, store=store.path)
    for held in store.housekeeping.held_back():
        out.add(table.RETENTION_HELD_EVENTS, held.events, topic=held.topic,
                consumer=held.consumer)
        out.add(table.RETENTION_HELD_AGE, held.held_ms / 1000, topic=held.topic,
                consumer=held.consumer)
    now_ms = _now_ms()
    for config in store.queues():
        for worker in store.queue(config.name).workers():
            if now_ms > worker.expires_ms + LOST_WORKER_SCRAPED_MS:
                continue  # lost long ago: its replacement, or the queue's alerts, speak now
            out.add(table.WORKER_HEARTBEAT_AGE, max(0, now_ms - worker.seen_ms) / 1000,
                    queue=worker.queue, worker=str(worker.id), host=worker.host,
                    pid=str(worker.pid))


def _mirror_samples(out: Exposition, store: Store) -> None:
    """The Kafka mirrors' gauges, from their holds (consumers ``sqliteq.mirror[.<prefix>]``)."""
    for hold in store.consumers():
        prefix = hold_prefix(hold.consumer)
        if prefix is None:
            continue
        labels = {"mirror": hold.consumer, "topic": hold.topic, "kafka_topic": prefix + hold.topic}
        out.add(table.MIRROR_OFFSET, hold.next_offset, **labels)
        out.add(table.MIRROR_LAG, hold.lag, **labels)
        out.add(table.MIRROR_LAST_DELIVERY, hold.updated_ms / 1000, **labels)


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
