"""Queue controls across worker processes (``sqliteq worker``): the cap, the rate limit, pause.

Each worker process writes what it handled to its own log file; claim times
come from the jobs' lease expiry (claim time + the queue's visibility
timeout), which the store stamps inside the claim transaction.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import apsw
import pytest

from spark_queue.store import Store
from spark_queue.store.queues import queue_admin

pytestmark = pytest.mark.slow

HANDLERS = """
import os, time

def _log(job, event):
    with open(os.environ["SQ_TEST_LOG"] + "." + str(os.getpid()), "a") as f:
        f.write(f"{event} {job.id} {job.attempts} {job.lease_expires_ms}\\n")

def brief(job):
    _log(job, "start")
    time.sleep(0.02)
    _log(job, "done")

def gated(job):
    _log(job, "start")
    while not os.path.exists(os.environ["SQ_TEST_GATE"]):
        time.sleep(0.005)
    _log(job, "done")
"""

VISIBILITY_MS = 30_000


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "handlers.py").write_text(HANDLERS)
    return tmp_path


def start_worker(workdir, store_path, handler, *flags):
    env = dict(os.environ, SQ_TEST_LOG=str(workdir / "log"), SQ_TEST_GATE=str(workdir / "gate"))
    index = len(list(workdir.glob("stderr.*")))
    stderr = open(workdir / f"stderr.{index}", "w")  # noqa: SIM115 - the process owns it
    proc = subprocess.Popen(
        [sys.executable, "-m", "spark_queue", "worker", store_path, f"handlers:{handler}",
         "--queue", "q", "--json", *flags],
        cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
    )
    stderr.close()
    return proc


def summary(proc) -> dict:
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0
    return json.loads(out.strip().splitlines()[-1])


def events(workdir, kind="done") -> list[tuple[int, int, int]]:
    rows = []
    for path in workdir.glob("log.*"):
        for line in path.read_text().splitlines():
            event, *numbers = line.split()
            if event == kind:
                rows.append(tuple(map(int, numbers)))
    return rows


def wait_for(condition, timeout_s=120.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def live_leases(conn: apsw.Connection) -> int:
    now = time.time_ns() // 1_000_000
    return conn.execute(
        "SELECT count(*) FROM sq_jobs WHERE lease_expires_at > ?", (now,)
    ).fetchone()[0]


def test_sixteen_slots_never_hold_more_than_the_cap_and_do_every_job_once(workdir, store_path):
    with Store(store_path) as store:
        store.queue("q", max_leased=3, visibility_timeout_ms=VISIBILITY_MS).enqueue_many(
            range(300)
        )
    procs = [
        start_worker(workdir, store_path, "brief", "--concurrency", "4", "--until-empty")
        for _ in range(4)
    ]
    # Sample the table while they run, from a connection of our own.
    sampler = apsw.Connection(store_path, flags=apsw.SQLITE_OPEN_READONLY)
    samples = []
    while any(p.poll() is None for p in procs):
        samples.append(live_leases(sampler))
    sampler.close()
    acked = sum(summary(p)["acked"] for p in procs)
    assert len(samples) > 100
    assert max(samples) == 3  # reached, never exceeded
    done = events(workdir)
    assert acked == 300 and sorted(job_id for job_id, _, _ in done) == list(range(1, 301))
    assert {attempts for _, attempts, _ in done} == {1}


def test_four_processes_drain_a_rate_limited_queue_no_faster_than_the_bucket(
    workdir, store_path
):
    rate, burst, jobs = 50.0, 50, 350
    with Store(store_path) as store:
        q = store.queue("q", visibility_timeout_ms=VISIBILITY_MS, rate_limit_per_s=rate)
        q.enqueue_many(range(jobs))
    procs = [start_worker(workdir, store_path, "brief", "--until-empty") for _ in range(4)]
    acked = sum(summary(p)["acked"] for p in procs)
    claims = sorted(expires - VISIBILITY_MS for _, _, expires in events(workdir, "start"))
    assert acked == jobs == len(claims)
    # The hard invariant: no window of t seconds ever got more than burst + rate * t claims.
    for i in range(len(claims)):
        for j in range(i, len(claims)):
            assert j - i + 1 <= burst + rate * (claims[j] - claims[i]) / 1000 + 1e-6
    # So the drain takes at least (jobs - burst) / rate; it should not take much longer.
    implied_s = (jobs - burst) / rate
    span_s = (claims[-1] - claims[0]) / 1000
    assert span_s >= implied_s * (1 - 1e-9)
    assert span_s <= implied_s * 1.15 + 2.0, f"{span_s:.2f} s for an implied {implied_s:.2f} s"


def test_pause_during_a_drain_stops_new_claims_lets_leases_finish_and_resume_continues(
    workdir, store_path
):
    with Store(store_path) as store:
        store.queue("q", visibility_timeout_ms=VISIBILITY_MS).enqueue_many(range(40))
    procs = [
        start_worker(workdir, store_path, "gated", "--concurrency", "2", "--until-empty")
        for _ in range(4)
    ]
    with Store(store_path) as store:
        q = store.queue("q")
        # Every slot holds a job it cannot finish until the gate opens.
        wait_for(lambda: q.stats().leased == 8)
        with store.write() as conn:
            queue_admin.configure(conn, "q", {"paused": True})
            in_flight = {j.id for j in queue_admin.peek(conn, "q", 100) if j.state == "leased"}
            waiting = {j.id for j in queue_admin.peek(conn, "q", 100) if j.state == "ready"}
        assert len(in_flight) == 8 and len(waiting) == 32
        (workdir / "gate").touch()
        # In-flight jobs finish and are acked while the queue is paused.
        wait_for(lambda: q.stats().leased == 0)
        assert {job_id for job_id, _, _ in events(workdir)} == in_flight
        # Every process has since looked at the queue and seen the pause.
        wait_for(lambda: all(
            "holds claims back (paused)" in path.read_text()
            for path in workdir.glob("stderr.*")
        ))
        late = set(q.enqueue_many(range(100, 110)))  # enqueues during the pause land
        with store.write() as conn:
            jobs = {j.id: j for j in queue_admin.peek(conn, "q", 100)}
            # Nothing was claimed after the pause committed: still ready, attempts untouched.
            assert set(jobs) == waiting | late
            assert all(j.state == "ready" and j.attempts == 0 for j in jobs.values())
            queue_admin.configure(conn, "q", {"paused": False})
    acked = sum(summary(p)["acked"] for p in procs)
    done = events(workdir)
    assert acked == 50 and len(done) == 50
    assert {job_id for job_id, _, _ in done} == in_flight | waiting | late
    assert {attempts for _, attempts, _ in done} == {1}
