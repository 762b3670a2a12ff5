"""docs/pipelines.md runs as written: a declarative pipeline (``spark-pipelines run``)
with a streaming table reading a sqliteq topic and two sqliteq sinks fed by append flows,
run twice with a new event between, puts every event exactly once into the queue and the
copy topic. On every pyspark of the matrix that has ``pyspark.pipelines`` (4.1 on, 4.2
included), each from the built wheel.

Self-contained like test_doc_examples.py (the matrix runs it with the checkout off
``sys.path``): the page's blocks are found by a regex repeated here. The page's directory
is replaced by the test's own, so two versions of the matrix can run it at once.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import textwrap

import pytest

from spark_queue.store import Store

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "pipelines.md"
PAGE_DIR = "/tmp/orders-pipeline"
# Every `spark-pipelines run` starts a Spark Connect server on its one port (15002); the
# matrix runs two pyspark versions at once, and a second server failed to bind: runs of
# this test in any venv take turns on this lock.
CONNECT_PORT_LOCK = pathlib.Path(tempfile.gettempdir()) / "spark_queue-spark-connect-port.lock"
FENCE = re.compile(r"^( *)```(\w+)\n(.*?)^\1```[ \t]*$", re.M | re.S)


def page_blocks(lang: str) -> list[str]:
    source = PAGE.read_text(encoding="utf-8")
    return [textwrap.dedent(m.group(3)) for m in FENCE.finditer(source) if m.group(2) == lang]


def run_bash(block: str, work: pathlib.Path) -> str:
    bin_dir = str(pathlib.Path(sys.executable).parent)  # sqliteq, spark-pipelines
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"],
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    with open(CONNECT_PORT_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.replace(PAGE_DIR, str(work))],
            cwd=work.parent, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{block}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return done.stdout


def copies(work: pathlib.Path) -> tuple[list[dict], list[dict]]:
    """The events of the copy topic and the jobs of the queue, as their JSON values."""
    with Store(str(work / "orders.sqlite")) as store:
        topic = [json.loads(event.value) for event in store.read("orders-copy", 0, limit=100)]
        jobs = [json.loads(job.payload) for job in store.queue("orders-work").peek(100)]
    return topic, jobs


@pytest.mark.slow
@pytest.mark.timeout(1200)  # two Spark Connect servers' starts, on a loaded CI machine
def test_two_pipeline_runs_put_every_event_once_into_the_queue_and_the_topic(tmp_path):
    if importlib.util.find_spec("pyspark.pipelines") is None:
        pytest.skip("pyspark 4.0 has no declarative pipelines (pyspark.pipelines, 4.1 on)")
    work = tmp_path / "orders-pipeline"
    setup, first_run, second_run = page_blocks("bash")
    [spec] = page_blocks("yaml")
    [code] = page_blocks("python")
    run_bash(setup, work)
    (work / "spark-pipeline.yml").write_text(spec.replace(PAGE_DIR, str(work)))
    (work / "transformations" / "orders.py").write_text(code)

    out = run_bash(first_run, work)
    assert re.search(r"^orders-copy\s+0\s+3\s+3\b", out, re.M), out
    topic, jobs = copies(work)
    assert sorted(e["id"] for e in topic) == [1, 2, 3]
    assert sorted(j["id"] for j in jobs) == [1, 2, 3]

    run_bash(second_run, work)
    topic, jobs = copies(work)
    assert sorted(e["id"] for e in topic) == [1, 2, 3, 4]
    assert sorted(j["id"] for j in jobs) == [1, 2, 3, 4]
    # The catalog outlived the runs where the page says: in the directory they started in.
    assert (work / "metastore_db").is_dir()
