"""Metrics exposition: valid Prometheus text; queue, worker and metrics modules stay Spark-free."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from spark_queue import metrics
from spark_queue.metrics import render
from spark_queue.store import Store
from spark_queue.worker import Worker

_SAMPLE = re.compile(r'^[a-z_]+\{([a-z_]+="(?:[^"\\]|\\.)*",?)+\} -?[0-9.e+]+$')


def test_every_metric_line_is_valid_prometheus_text(store):
    store.queue("a.b-c", max_attempts=1).enqueue_many(["x", "y"])
    store.publish("t", 1)
    store.commit_offsets("c", {"t": 0})
    text = render(store)
    declared = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:]
            assert kind == ("counter" if name.endswith("_total") else "gauge")
            declared.add(name)
        elif not line.startswith("# HELP "):
            assert _SAMPLE.match(line), line
            assert line.split("{")[0] in declared
    assert 'sqliteq_queue_jobs{queue="a.b-c",state="ready"} 2' in text
    assert 'sqliteq_consumer_lag{consumer="c",topic="t"} 1' in text


def test_an_empty_store_renders_only_headers_and_the_stores_own_gauges(store_path):
    with Store(store_path) as store:
        lines = render(store).splitlines()
    assert lines and all(line.startswith("# ") or f'store="{store_path}"' in line
                         for line in lines)


def test_queue_worker_and_metrics_modules_never_import_pyspark():
    code = (
        "import sys, spark_queue.store, spark_queue.worker, spark_queue.metrics, "
        "spark_queue.cli.queue_commands, spark_queue.cli.metrics_command\n"
        "assert not [m for m in sys.modules if m.startswith('pyspark')], 'pyspark imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_published_counts_every_event_ever_published_and_workers_count_the_alive(store):
    q = store.queue("q")
    q.configure()
    q.register_worker(host="h", pid=1, concurrency=1, ttl_ms=60_000)
    for value in range(5):
        store.publish("t", value)
    # A foreign writer through the publish view counts too; retention never lowers it.
    store.conn.execute(
        "INSERT INTO sq_publish (topic, value, value_type) VALUES ('t', 'x', 1)"
    )
    store.topic("t").set_retention(retention_rows=1)
    store.topic("t").prune()
    text = render(store)
    assert 'sqliteq_topic_published_total{topic="t"} 6' in text
    assert 'sqliteq_topic_earliest_offset{topic="t"} 5' in text  # pruned to one row
    assert "# TYPE sqliteq_topic_published_total counter" in text
    assert 'sqliteq_queue_workers{queue="q"} 1' in text


def test_queue_counters_count_acks_nacks_and_dead_letters_in_their_transactions(store):
    q = store.queue("q", max_attempts=2, backoff_base_ms=0, backoff_cap_ms=0)
    q.enqueue_many(["a", "b", "c"])
    jobs = q.claim(3)
    q.ack_many(jobs[:2])
    q.nack(jobs[2], "boom")               # retried
    [again] = q.claim(1)
    q.nack(again, "boom")                 # dead at max attempts
    q.ack_many(jobs[:2])                  # stale: counts nothing
    assert tuple(q.counters())[1:] == (2, 2, 1)
    text = render(store)
    assert 'sqliteq_queue_acked_total{queue="q"} 2' in text
    assert 'sqliteq_queue_failed_total{queue="q"} 2' in text
    assert 'sqliteq_queue_dead_lettered_total{queue="q"} 1' in text


def test_a_job_whose_last_lease_expired_counts_as_dead_lettered_not_failed(store):
    q = store.queue("q", max_attempts=1)
    q.enqueue("x")
    [job] = q.claim(1, visibility_timeout_ms=1)
    while q.stats().dead == 0:  # the next claim after the lease expired buries it
        assert q.claim(1) == [] or False
    assert tuple(q.counters())[1:] == (0, 0, 1) and job.attempts == 1


def gauge(text, name, **labels):
    """The value of one sample of ``text``; None when it is absent."""
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_the_file_and_wal_gauges_follow_the_files_on_disk(store):
    before = render(store)
    store.publish_many("t", ["x" * 1000] * 2000)  # ~2 MB through the WAL
    after = render(store)
    assert gauge(after, "sqliteq_store_wal_bytes") > gauge(before, "sqliteq_store_wal_bytes")
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    checkpointed = render(store)
    assert gauge(checkpointed, "sqliteq_store_wal_bytes") == 0
    assert gauge(checkpointed, "sqliteq_store_file_bytes") > gauge(
        before, "sqliteq_store_file_bytes")


def test_free_bytes_is_what_the_file_system_reports(store, monkeypatch):
    import os

    class Disk:
        f_bavail, f_frsize = 3, 4096

    monkeypatch.setattr(os, "statvfs", lambda path: Disk)
    assert gauge(render(store), "sqliteq_store_free_bytes") == 3 * 4096


def test_events_a_consumer_holds_back_from_retention_are_counted_per_topic(store):
    store.topic("t").configure(retention_rows=2)
    store.publish_many("t", range(10))
    assert gauge(render(store), "sqliteq_topic_retention_held_events", topic="t") is None
    store.commit_offsets("slow", {"t": 3})
    text = render(store)
    assert gauge(text, "sqliteq_topic_retention_held_events", topic="t", consumer="slow") == 5
    assert gauge(text, "sqliteq_topic_retention_held_seconds", topic="t") >= 0
    store.commit_offsets("slow", {"t": 10})
    assert gauge(render(store), "sqliteq_topic_retention_held_events", topic="t") is None


def test_the_last_retention_run_shows_when_it_ran_and_what_it_deleted(store):
    store.topic("t").configure(retention_rows=1)
    store.publish_many("t", range(4))
    assert gauge(render(store), "sqliteq_retention_last_run_timestamp_seconds") == 0
    run = store.housekeeping.run()
    text = render(store)
    assert gauge(text, "sqliteq_retention_last_run_timestamp_seconds") == run.started_ms / 1000
    assert gauge(text, "sqliteq_retention_last_run_deleted_events") == 3
    store.housekeeping.set_interval(0)
    assert gauge(render(store), "sqliteq_housekeeping_interval_seconds") == 0


def test_a_workers_heartbeat_age_grows_until_its_next_heartbeat(store):
    q = store.queue("q")
    q.configure()
    worker_id = q.register_worker(host="h", pid=7, concurrency=1, ttl_ms=60_000)
    labels = {"queue": "q", "worker": worker_id, "host": "h", "pid": 7}
    first = gauge(render(store), "sqliteq_worker_heartbeat_age_seconds", **labels)
    deadline = time.monotonic() + 60
    while gauge(render(store), "sqliteq_worker_heartbeat_age_seconds", **labels) <= first:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    beat = time.monotonic()
    q.worker_heartbeat(worker_id, jobs_held=0, ttl_ms=60_000)
    age = gauge(render(store), "sqliteq_worker_heartbeat_age_seconds", **labels)
    assert age <= time.monotonic() - beat + 0.002  # counted from the new heartbeat (ms clock)


# -- the alert rules (conf/prometheus), run by promtool (scripts/promtool fetches it) -----

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "conf" / "prometheus" / "sqliteq-alerts.yml"
RULE_TESTS = ROOT / "conf" / "prometheus" / "sqliteq-alerts.test.yml"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "scripts" / "promtool"), *args], capture_output=True,
                          text=True, timeout=300)


def test_every_alert_rule_has_a_promtool_case_and_every_case_passes():
    rules = {r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]}
    cases = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    tested = {t["alertname"] for case in cases for t in case["alert_rule_test"]
              if any(t.get("exp_alerts") or [])}
    assert tested == rules, rules ^ tested
    done = promtool("test", "rules", str(RULE_TESTS))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_lost_workers_series_leaves_the_scrape_within_the_bound(store, monkeypatch):
    q = store.queue("q")
    q.enqueue("x")  # creates the queue
    lost = q.register_worker(host="h", pid=10, concurrency=1, ttl_ms=1_000)  # then SIGKILLed
    replacement = q.register_worker(host="h", pid=11, concurrency=1, ttl_ms=60_000)
    expires_ms = next(w.expires_ms for w in q.workers() if w.id == lost)

    def workers_scraped() -> set[str]:
        return set(re.findall(r'sqliteq_worker_heartbeat_age_seconds\{queue="q",worker="(\d+)"',
                              render(store)))

    assert workers_scraped() == {str(lost), str(replacement)}
    monkeypatch.setattr(metrics, "_now_ms", lambda: expires_ms + metrics.LOST_WORKER_SCRAPED_MS)
    assert workers_scraped() == {str(lost), str(replacement)}  # still alerting: it is news
    monkeypatch.setattr(metrics, "_now_ms",
                        lambda: expires_ms + metrics.LOST_WORKER_SCRAPED_MS + 1)
    assert workers_scraped() == {str(replacement)}
    assert {w.id for w in q.workers()} == {lost, replacement}  # still listed for the operator


def test_jobs_waiting_after_the_worker_stops_fire_nobody_working(store, store_path, tmp_path):
    done = threading.Event()
    worker = Worker(store_path, "q", lambda job: done.set(), create_queue=True,
                    idle_poll_max_ms=50)
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        store.queue("q").enqueue("first")
        assert done.wait(30)
        deadline = time.monotonic() + 30
        while gauge(render(store), "sqliteq_queue_workers", queue="q") != 1:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        working = render(store)
    finally:
        worker.stop()
        thread.join(30)
    store.queue("q").enqueue_many(["waits"] * 3)
    stopped = render(store)
    assert gauge(stopped, "sqliteq_queue_workers", queue="q") == 0
    # Each scrape as promtool's series, a scrape a minute: the working one for 3 minutes,
    # then the stopped one, its oldest job a minute older at each (nobody claims it).
    age = "sqliteq_queue_oldest_ready_age_seconds"
    ages = ([gauge(working, age, queue="q")] * 3
            + [gauge(stopped, age, queue="q") + 60 * k for k in range(10)])
    workers = [gauge(working, "sqliteq_queue_workers", queue="q")] * 3 + [0.0] * 10
    case = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": f'{age}{{queue="q"}}', "values": " ".join(map(str, ages))},
                {"series": 'sqliteq_queue_workers{queue="q"}',
                 "values": " ".join(map(str, workers))},
            ],
            "alert_rule_test": [
                {"eval_time": "3m", "alertname": "SqliteqQueueNobodyWorking", "exp_alerts": []},
                {"eval_time": "8m", "alertname": "SqliteqQueueNobodyWorking", "exp_alerts": [{
                    "exp_labels": {"severity": "critical", "queue": "q"},
                    "exp_annotations": {"summary": "Jobs of queue q wait and no worker is alive"},
                }]},
            ],
        }],
    }
    path = tmp_path / "stopped.test.yml"
    path.write_text(yaml.safe_dump(case))
    done_run = promtool("test", "rules", str(path))
    assert done_run.returncode == 0, done_run.stdout + done_run.stderr


def test_the_scrape_config_example_with_its_rules_is_valid():
    done = promtool("check", "config", str(ROOT / "conf" / "prometheus" / "prometheus.yml"))
    assert done.returncode == 0, done.stdout + done.stderr


# -- the exposition's shape, held against the golden text the alert rules were written for --

GOLDEN = ROOT / "tests" / "fixtures" / "metrics_exposition.txt"


def every_family_store(path: str) -> None:
    """A store with at least one sample of every metric family: queues with limits, a paused
    one, counters, a worker, topics with limits and retention, consumers (one name with two
    queries), a Kafka mirror's hold, a housekeeping run, and a replica with events waiting."""
    from spark_queue.store.replica_cycles import ReplicaCycles

    with Store(path) as store:
        q = store.queue("work", max_attempts=1, max_leased=5, max_payload_bytes=64)
        q.enqueue_many(["a", "b", "c", "d"])
        q.enqueue("later", delay_ms=600_000)
        jobs = q.claim(3)
        q.ack(jobs[0])
        q.nack(jobs[1], "boom")
        q.register_worker(host="h", pid=7, concurrency=1, ttl_ms=60_000)
        store.queue("rated", rate_limit_per_s=5.0).enqueue("x")
        store.queue("off").enqueue("x")
        store.queue("off").pause()
        store.topic("t").configure(retention_rows=2, max_payload_bytes=128)
        store.publish_many("t", range(10))
        store.topic("t").set_schema("n INT", on_invalid="quarantine")
        store.publish("u", 1)
        store.commit_offsets("slow", {"t": 3, "u": 0})
        store.commit_offsets("bronze", {"t": 8}, reader="fast")
        store.commit_offsets("bronze", {"t": 5}, reader="late")
        store.commit_offsets("sqliteq.mirror.pre.", {"t": 6})
        store.housekeeping.run()
    cycles = ReplicaCycles(path)
    try:
        cycles.mark("s3://bucket/golden")
        cycles.finish(*cycles.begin())
    finally:
        cycles.close()
    with Store(path) as store:
        store.publish("u", 2)  # waits for the replica


def exposition_shape(text: str, store_path: str) -> str:
    """``text`` with each sample's value reduced to its form (``INT`` or ``FLOAT``) and the
    store's path to ``<store>``: names, types, help, labels and order stay as they are."""
    lines = []
    for line in text.replace(f'"{store_path}"', '"<store>"').splitlines():
        if not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            line = f"{series} {'INT' if re.fullmatch(r'-?[0-9]+', value) else 'FLOAT'}"
        lines.append(line + "\n")
    return "".join(lines)


def test_the_cli_and_the_server_expose_the_golden_names_types_labels_and_help(
        store_path, capsys):
    """tests/fixtures/metrics_exposition.txt is ``sqliteq metrics`` of :func:`every_family_store`
    as it was before the metrics were declared once: Prometheus rules, dashboards and the
    alert rules in conf/prometheus name these series, so no refactor may change them."""
    import urllib.request

    from spark_queue.cli import main

    every_family_store(store_path)
    assert main(["metrics", store_path]) == 0
    printed = capsys.readouterr().out
    server = metrics.MetricsServer(store_path, port=0)
    server.serve_in_thread()
    try:
        url = f"http://127.0.0.1:{server.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            served = response.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    golden = GOLDEN.read_text()
    assert exposition_shape(printed, store_path) == golden
    assert exposition_shape(served, store_path) == golden


def test_a_sample_with_other_labels_than_declared_is_refused_by_name():
    import pytest

    from spark_queue.metric_table import QUEUE_JOBS

    out = metrics.Exposition()
    for wrong in ({"queue": "q"}, {"queue": "q", "state": "ready", "host": "h"},
                  {"queue": "q", "status": "ready"}):
        with pytest.raises(TypeError, match="sqliteq_queue_jobs takes the labels queue, state"):
            out.add(QUEUE_JOBS, 1, **wrong)
    out.add(QUEUE_JOBS, 1, state="ready", queue='a"b')  # written in the declared order
    assert 'sqliteq_queue_jobs{queue="a\\"b",state="ready"} 1\n' in out.text()
