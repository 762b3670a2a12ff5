"""Run the demo end to end: producer -> Spark (Delta bronze, alert jobs) -> workers -> summary."""

from __future__ import annotations

import glob
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from spark_queue.checkpoint_repair import repair_checkpoint
from spark_queue.demo.config import DemoConfig
from spark_queue.demo.sensor_producer import READING_SCHEMA, SensorProducer
from spark_queue.demo.status import BronzeStatus, has_checkpoint
from spark_queue.store import Job, Store
from spark_queue.worker import Worker

log = logging.getLogger(__name__)


def handle_alert(config: DemoConfig) -> Callable[[Job], None]:
    """The worker's handler: "notify on-call" by appending the alert to alerts.log."""
    lock = threading.Lock()
    path = os.path.join(config.dir, "alerts.log")

    def handle(job: Job) -> None:
        with lock, open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(job.payload, default=str) + "\n")

    return handle


def run_demo(config: DemoConfig, out: Callable[[str], object] = print) -> dict[str, Any]:
    """The demo, its store replicated while it runs when ``config.replica_url`` is set."""
    os.makedirs(config.dir, exist_ok=True)
    if not config.replica_url:
        return _run_pipeline(config, out)
    from spark_queue.replication import start_replication

    # Before the store is opened: a wiped disk gets its store back, offsets and all,
    # so the checkpoints that survived resume on the events they already read. (The
    # replicator creates a missing store it did not restore: it exists either way.)
    replicating = start_replication(config.store_path, config.replica_url)
    if replicating.restored:
        out(f"store {config.store_path} was missing: restored from {replicating.url}")
    out(f"replicating {config.store_path} to {replicating.url} while the demo runs")
    try:
        summary = _run_pipeline(config, out)
    finally:
        replicating.stop()  # its last cycle: the replica holds the run's every event
    return {**summary, "replica": replicating.url}


def _run_pipeline(config: DemoConfig, out: Callable[[str], object]) -> dict[str, Any]:
    from spark_queue.demo.pipeline import start_alerts, start_bronze
    from spark_queue.spark.notebooks import driver_uri
    from spark_queue.spark.query_progress import end_offset, query_id
    from spark_queue.spark.session import get_or_create, table_format

    with Store(config.store_path) as store:
        # Declared before anything reads it; a rerun's same schema stores nothing.
        store.topic(config.topic).set_schema(READING_SCHEMA)
        store.queue(config.queue, visibility_timeout_ms=10_000, max_attempts=3)
        start_latest = store.topic(config.topic).latest_offset()
    out(f"store {config.store_path}: topic {config.topic!r} holds {start_latest} events; "
        f"publishing {config.events} more at {config.events_per_second}/s")
    producer = SensorProducer(config.store_path, config.topic, events=config.events,
                        events_per_second=config.events_per_second,
                        batch_size=config.batch_size, devices=config.devices)

    spark_log = os.path.join(config.dir, "spark.log")
    out(f"starting Spark; its own output goes to {spark_log}")
    if not glob.glob(os.path.expanduser("~/.ivy2*/jars/io.delta_delta-spark*.jar")):
        out("fetching Delta Lake's jars from Maven Central (first run only, about a minute)...")
    spark = get_or_create("spark_queue demo", jvm_log=spark_log)
    fmt = table_format(spark)
    if fmt != "delta":
        out("this session has no Delta Lake (delta-spark is not installed): bronze is Parquet")
    for checkpoint in (config.bronze_checkpoint(fmt), config.checkpoint("alerts")):
        # A power cut can leave Spark's newest checkpoint files empty: remove exactly those.
        repaired = repair_checkpoint(checkpoint, missing_ok=True)
        if repaired.torn:
            out(str(repaired))
    status = BronzeStatus(config.topic, resuming=has_checkpoint(config.bronze_checkpoint(fmt)))
    bronze = start_bronze(spark, config, fmt)
    alerts = start_alerts(spark, config)
    producer.start()
    worker = Worker(config.store_path, config.queue, handle_alert(config),
                    concurrency=config.workers, batch_size=16, grace_ms=5_000)
    worker_thread = threading.Thread(target=worker.run, name="demo-worker", daemon=True)
    worker_thread.start()

    started = time.monotonic()
    last_print, last_published = started, 0

    def report(now: float, phase: str, progress: Any, latest: int, monitor: Store) -> None:
        nonlocal last_print, last_published
        depth = _queue_row(monitor, config.queue)
        span = now - last_print
        out(f"[{now - started:6.1f}s] {phase:<19} | produced {producer.published:>7,} "
            f"({(producer.published - last_published) / span:,.0f}/s) | "
            f"{status.describe(progress, bronze, latest, span)} | alerts queue: ready "
            f"{depth['ready']} leased {depth['leased']} done {worker.stats.acked} "
            f"dead {depth['dead']}")
        last_print, last_published = now, producer.published

    try:
        with Store(config.store_path, readonly=True) as monitor:
            while True:
                time.sleep(0.25)
                for query in (bronze, alerts):
                    error = query.exception()
                    if error is not None:
                        raise error
                # In this order: a producer seen stopped has published all it will, and a
                # query's progress read before the topic's end cannot be past it.
                producing = producer.is_alive()
                progress = bronze.lastProgress
                bronze_end = end_offset(progress, config.topic)
                latest = monitor.topic(config.topic).latest_offset()
                now = time.monotonic()
                if now - last_print >= config.progress_seconds:
                    report(now, status.phase(progress, producing), progress, latest, monitor)
                if producer.error is not None:
                    raise producer.error
                # A replicated store's readers see up to its replicated mark only: the
                # run's own events are all readable once the mark has passed them.
                published_all = latest >= start_latest + producer.published
                caught_up = not producing and published_all and bronze_end >= latest
                if caught_up and end_offset(alerts.lastProgress, config.topic) >= latest:
                    # A last line, so a run shorter than the print interval (a rerun of a
                    # few events) also ends on where it stands: lag 0.
                    if now > last_print:
                        report(now, "caught up", progress, latest, monitor)
                    break
                if now - started > config.max_seconds:
                    out(f"stopping after max_seconds={config.max_seconds}: not caught up yet")
                    break
    finally:
        producer.stop_requested.set()
        finals = {consumer: (end_offset(query.lastProgress, config.topic),
                             query_id(query.lastProgress))
                  for consumer, query in (("demo-bronze", bronze), ("demo-alerts", alerts))}
        for query in (bronze, alerts):
            query.stop()
    _save_final_offsets(config, finals)
    _drain(worker, config)
    worker.stop()
    worker_thread.join(timeout=10)

    bronze_df = spark.read.format(fmt).load(driver_uri(config.bronze_path(fmt)))
    with Store(config.store_path, readonly=True) as store:
        summary = {
            "events_in_topic": store.topic(config.topic).latest_offset(),
            "events_produced_now": producer.published,
            "bronze_table": f"{fmt} {config.bronze_path(fmt)}",
            "rows_in_bronze": bronze_df.count(),
            "distinct_offsets_in_bronze": bronze_df.select("offset").distinct().count(),
            "alerts_processed_now": worker.stats.acked,
            "alerts_log": os.path.join(config.dir, "alerts.log"),
            "alerts_queue": _queue_row(store, config.queue),
            "seconds": round(time.monotonic() - started, 1),
        }
    return summary


def _save_final_offsets(config: DemoConfig, finals: dict[str, tuple[int, str | None]]) -> None:
    """Save each query's last committed end offset as its position under its consumer name.

    The source saves a batch's offsets when Spark plans the next one, so after
    a stop they trail by one batch; the demo knows where its queries ended and
    brings them level, so ``sqliteq consumers`` shows the lag that is real (each query's
    own position included: the id its offsets carry).
    """
    with Store(config.store_path) as store:
        for consumer, (offset, reader) in finals.items():
            if offset > 0:
                store.commit_offsets(consumer, {config.topic: offset}, reader=reader)


def _queue_row(store: Store, queue: str) -> dict[str, int]:
    for stats in store.queue_stats():
        if stats.queue == queue:
            return {"ready": stats.ready, "leased": stats.leased, "delayed": stats.delayed,
                    "dead": stats.dead}
    return {"ready": 0, "leased": 0, "delayed": 0, "dead": 0}


def _drain(worker: Worker, config: DemoConfig, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    with Store(config.store_path, readonly=True) as store:
        while time.monotonic() < deadline:
            depth = _queue_row(store, config.queue)
            if depth["ready"] + depth["leased"] == 0:
                return
            time.sleep(0.2)
