"""Metrics exposition: valid Prometheus text; queue, worker and metrics modules stay Spark-free."""

from __future__ import annotations

import re
import subprocess
import sys

from spark_queue.metrics import render
from spark_queue.store import Store

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


def test_an_empty_store_renders_only_headers(store_path):
    with Store(store_path) as store:
        lines = render(store).splitlines()
    assert lines and all(line.startswith("# ") for line in lines)


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
    store.set_retention("t", retention_rows=1)
    store.prune("t")
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
    [job] = q.claim(1, lease_ms=1)
    while q.stats().dead == 0:  # the next claim after the lease expired buries it
        assert q.claim(1) == [] or False
    assert tuple(q.counters())[1:] == (0, 0, 1) and job.attempts == 1
