"""Spark enqueues, workers outside Spark process: every row becomes one job, done exactly once."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import textwrap

import pytest

from spark_queue.store import Store

pytestmark = pytest.mark.slow

HANDLER = textwrap.dedent(
    """
    import os

    def handle(job):
        with open(os.environ["E2E_DONE_FILE"], "a") as f:
            f.write(f"{job.payload['n']}\\n")
    """
)


def test_spark_batch_into_queue_is_processed_exactly_once_by_worker_processes(spark, tmp_path):
    path = str(tmp_path / "store.sqlite")
    rows = spark.range(10_000).selectExpr(
        "id AS n", "concat('row-', id) AS idempotency_key", "CAST(id % 4 AS INT) AS priority"
    )
    (rows.write.format("sqliteq").mode("append").option("queue", "work")
     .option("createStore", "true").save(path))
    # A retried job write must not double the work: the keys keep one job per row.
    rows.write.format("sqliteq").mode("append").option("queue", "work").save(path)
    with Store(path) as store:
        assert store.queue("work").stats().ready == 10_000

    (tmp_path / "e2e_handler.py").write_text(HANDLER)
    workers = []
    for i in range(2):
        env = dict(os.environ, PYTHONPATH=str(tmp_path), E2E_DONE_FILE=str(tmp_path / f"{i}.txt"))
        workers.append(subprocess.Popen(
            [sys.executable, "-m", "spark_queue", "worker", path, "e2e_handler:handle",
             "--queue", "work", "--concurrency", "2", "--batch-size", "64", "--until-empty"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ))
    for proc in workers:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, out + err

    done = collections.Counter()
    for i in range(2):
        # A worker that starts after the other has drained the queue (a slow process
        # start on a loaded machine) handles nothing and writes no file.
        done_file = tmp_path / f"{i}.txt"
        if done_file.exists():
            done.update(int(n) for n in done_file.read_text().split())
    assert sorted(done) == list(range(10_000))
    assert set(done.values()) == {1}
    with Store(path) as store:
        stats = store.queue("work").stats()
        assert (stats.ready, stats.leased, stats.delayed, stats.dead) == (0, 0, 0, 0)
