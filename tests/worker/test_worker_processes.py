"""Worker processes (``sqliteq worker``): many at once, SIGKILL, SIGTERM with a grace period."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from spark_queue.store import Store

pytestmark = pytest.mark.slow

HANDLERS = """
import os, time

def _log(job):
    with open(os.environ["SQ_TEST_LOG"] + "." + str(os.getpid()), "a") as f:
        f.write(f"{job.id} {job.attempts} {job.lease_token}\\n")

def record(job):
    _log(job)

def block(job):
    print(f"started {job.id}", flush=True)
    time.sleep(float(os.environ.get("SQ_TEST_SLEEP_S", "3600")))
    _log(job)
"""


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "handlers.py").write_text(HANDLERS)
    return tmp_path


def start_worker(workdir, store_path, handler, *flags, sleep_s=None):
    env = dict(os.environ, SQ_TEST_LOG=str(workdir / "log"))
    if sleep_s is not None:
        env["SQ_TEST_SLEEP_S"] = str(sleep_s)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spark_queue",
            "worker",
            store_path,
            f"handlers:{handler}",
            "--queue",
            "q",
            "--json",
            *flags,
        ],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def handled(workdir) -> list[tuple[int, int, int]]:
    rows = []
    for path in workdir.glob("log.*"):
        rows.extend(tuple(map(int, line.split())) for line in path.read_text().splitlines())
    return rows


def summary(proc, code: int = 0) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    return json.loads(out.strip().splitlines()[-1])


def test_four_worker_processes_ack_every_job_exactly_once(workdir, store_path):
    with Store(store_path) as store:
        q = store.queue("q")
        for start in range(0, 20_000, 5_000):
            q.enqueue_many(range(start, start + 5_000))
    procs = [
        start_worker(
            workdir,
            store_path,
            "record",
            "--concurrency",
            "2",
            "--batch-size",
            "32",
            "--until-empty",
        )
        for _ in range(4)
    ]
    acked = sum(summary(p)["acked"] for p in procs)
    rows = handled(workdir)
    ids = [job_id for job_id, _, _ in rows]
    assert acked == 20_000
    assert len(ids) == 20_000 and len(set(ids)) == 20_000
    # Every job was leased once: no second lease (live or not) was ever handed out.
    assert {attempts for _, attempts, _ in rows} == {1}
    with Store(store_path) as store:
        assert store.queue("q").stats()[1:] == (0, 0, 0, 0, None)


def test_sigkilled_workers_jobs_return_after_the_lease_and_complete(workdir, store_path):
    with Store(store_path) as store:
        store.queue("q", visibility_timeout_ms=1000).enqueue_many(range(20))
    victim = start_worker(workdir, store_path, "block", "--batch-size", "5")
    assert victim.stdout.readline().startswith("started")
    with Store(store_path) as store:
        held = {j.id for j in store.queue("q").peek(20) if j.state == "leased"}
    assert len(held) == 5
    victim.send_signal(signal.SIGKILL)
    victim.wait(10)
    # Its registration outlives it, listed as lost once its heartbeats stop coming.
    deadline = time.monotonic() + 60
    while True:
        with Store(store_path) as store:
            [listed] = store.queue("q").workers()
        if not listed.alive:
            break
        assert time.monotonic() < deadline, listed
        time.sleep(0.05)
    assert listed.pid == victim.pid and listed.jobs_held in (0, 5)

    rescuer = start_worker(workdir, store_path, "record", "--batch-size", "5", "--until-empty")
    assert summary(rescuer)["acked"] == 20
    rows = handled(workdir)
    assert (
        sorted(job_id for job_id, _, _ in rows) == sorted(set(job_id for job_id, _, _ in rows))
        and len(rows) == 20
    )
    attempts = {job_id: n for job_id, n, _ in rows}
    assert {attempts[i] for i in held} == {2}  # the killed lease counted as an attempt
    assert {n for i, n in attempts.items() if i not in held} == {1}
    with Store(store_path) as store:
        assert store.queue("q").stats()[1:] == (0, 0, 0, 0, None)
        # The rescuer unregistered when it stopped; the victim stays listed as lost.
        assert [(w.pid, w.alive) for w in store.queue("q").workers()] == [(victim.pid, False)]


def test_sigterm_lets_the_running_job_finish_and_exits(workdir, store_path):
    with Store(store_path) as store:
        store.queue("q").enqueue_many(["a", "b", "c"])
    proc = start_worker(workdir, store_path, "block", "--grace-ms", "20000", sleep_s=1.0)
    assert proc.stdout.readline().startswith("started")
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    result = summary(proc)
    assert time.monotonic() - sent < 10  # the job's 1 s, well within the grace period
    assert result["acked"] == 1 and len(handled(workdir)) == 1
    with Store(store_path) as store:
        stats = store.queue("q").stats()
    assert (stats.ready, stats.leased) == (2, 0)


def test_sigterm_nacks_a_job_that_outlives_the_grace_period_and_exits_3(workdir, store_path):
    with Store(store_path) as store:
        store.queue("q").enqueue("forever")
    proc = start_worker(workdir, store_path, "block", "--grace-ms", "500")
    assert proc.stdout.readline().startswith("started")
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    result = summary(proc, code=3)
    assert time.monotonic() - sent < 3  # 0.5 s grace plus interpreter exit
    assert result["interrupted"] == 1 and result["released"] == 0 and handled(workdir) == []
    with Store(store_path) as store:
        [job] = store.queue("q").peek(1)
    assert (job.state, job.attempts) == ("ready", 1)  # ready at once, the attempt counted
    assert "the grace period of 500ms ended" in job.last_error
