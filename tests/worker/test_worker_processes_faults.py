"""The worker fault run, in real processes: handlers raising every kind of BaseException,
exceptions whose messages cannot be printed or stored, a handler that hangs past its
lease. It ends with every job acked, or dead with its real error; SIGTERM and the exit
code say what happened (0 a clean stop, 3 handlers still running when the grace ended)."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from spark_queue.store import Store

pytestmark = pytest.mark.slow

HANDLERS = '''
import asyncio, time

class OwnBaseError(BaseException):
    pass

class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no str for you")

FAULTS = {
    "KeyboardInterrupt": lambda: KeyboardInterrupt(),
    "SystemExit": lambda: SystemExit(3),
    "GeneratorExit": lambda: GeneratorExit("closed"),
    "BaseException": lambda: BaseException("base"),
    "BaseExceptionGroup": lambda: BaseExceptionGroup("group", [SystemExit(1)]),
    "CancelledError": lambda: asyncio.CancelledError("cancelled"),
    "OwnBaseError": lambda: OwnBaseError("own"),
    "surrogate": lambda: ValueError("bad \\udc80 byte"),
    "unprintable": lambda: Unprintable(),
    "huge": lambda: ValueError("x" * 1_000_000),
}

def fault(job):
    if job.payload == "ok":
        return
    if job.payload == "hang":
        print(f"hanging {job.id}", flush=True)
        time.sleep(3600)
    raise FAULTS[job.payload]()
'''

# What each fault's dead letter must say: its real error.
REAL_ERRORS = {
    "KeyboardInterrupt": "\nKeyboardInterrupt",
    "SystemExit": "SystemExit: 3",
    "GeneratorExit": "GeneratorExit: closed",
    "BaseException": "BaseException: base",
    "BaseExceptionGroup": "BaseExceptionGroup: group",
    "CancelledError": "CancelledError: cancelled",
    "OwnBaseError": "OwnBaseError: own",
    "surrogate": "ValueError: bad \\udc80 byte",
    "unprintable": "Unprintable: <exception str() failed>",
    "huge": "characters cut",
    "hang": "the handler was still running when the worker stopped (the grace period of "
            "200ms ended",
}


def start_worker(workdir, store_path):
    # stderr to a file: the test reads it at the end, a pipe could fill up first.
    err = open(workdir / "stderr.txt", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "-m", "spark_queue", "worker", store_path, "handlers:fault",
         "--queue", "q", "--json", "--until-empty", "--concurrency", "2",
         "--lease-ms", "300ms", "--heartbeat-ms", "50ms", "--grace-ms", "200ms"],
        cwd=workdir, stdout=subprocess.PIPE, stderr=err, text=True, env=dict(os.environ),
    )


def wait_for(condition, what: str, timeout_s: float = 120):
    deadline = time.monotonic() + timeout_s
    while not (result := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return result


def jobs(store_path):
    with Store(store_path) as store:
        q = store.queue("q")
        return q.peek(100), q.dead_letters()


def lease_expiry(store_path, job_id: int) -> int:
    with Store(store_path) as store:
        return store.queue("q").get(job_id).lease_expires_ms or 0


def stop(proc, code: int, workdir: pathlib.Path) -> tuple[dict, str]:
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    err_text = (workdir / "stderr.txt").read_text(errors="replace")
    assert proc.returncode == code, err_text
    return json.loads(out.strip().splitlines()[-1]), err_text


def test_a_worker_fault_run_ends_with_every_job_acked_or_dead_with_its_real_error(
    tmp_path, store_path
):
    (tmp_path / "handlers.py").write_text(HANDLERS)
    payloads = ["ok"] * 3 + [k for k in REAL_ERRORS if k != "hang"] + ["hang"]
    with Store(store_path) as store:
        q = store.queue("q", max_attempts=2, backoff_base_ms=1, backoff_cap_ms=1)
        ids = dict(zip(q.enqueue_many(payloads), payloads, strict=True))
    hang_id = next(i for i, p in ids.items() if p == "hang")
    faults = len(payloads) - 4

    # Run 1: every fault is retried once, then dead; the hang outlives its lease.
    proc = start_worker(tmp_path, store_path)
    assert proc.stdout.readline().strip() == f"hanging {hang_id}"
    first_expiry = wait_for(lambda: lease_expiry(store_path, hang_id), "the lease")
    wait_for(lambda: len(jobs(store_path)[1]) == faults, "every fault dead-lettered")
    # The heartbeat kept the hung job's lease (300 ms) well past its first expiry.
    wait_for(lambda: lease_expiry(store_path, hang_id) > first_expiry + 300, "heartbeats")
    result, err = stop(proc, 3, tmp_path)
    # The hung job was given a retry too.
    assert (result["acked"], result["retried"], result["dead_lettered"]) == (3, faults + 1, faults)
    assert result["interrupted"] == 1 and result["released"] == 0
    assert "Traceback" not in err and "crashed" not in err
    assert err.count(" failed (attempt ") == 2 * faults
    assert max(map(len, err.splitlines())) < 1000  # the 1 MB message is cut in its line
    [hung], _ = jobs(store_path)
    assert (hung.id, hung.state, hung.attempts) == (hang_id, "ready", 1)
    assert REAL_ERRORS["hang"] in hung.last_error

    # Run 2: the hung job's last attempt hangs too: dead, with that error.
    proc = start_worker(tmp_path, store_path)
    assert proc.stdout.readline().strip() == f"hanging {hang_id}"
    result, _ = stop(proc, 3, tmp_path)
    assert (result["interrupted"], result["dead_lettered"]) == (1, 1)
    ready, dead = jobs(store_path)
    assert ready == [] and sorted(d.id for d in dead) == sorted(
        i for i, p in ids.items() if p != "ok")
    for letter in dead:
        assert REAL_ERRORS[ids[letter.id]] in letter.last_error, (ids[letter.id], letter)
        assert letter.attempts == 2

    # Run 3: nothing left; a clean stop exits 0.
    proc = start_worker(tmp_path, store_path)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert json.loads(out)["acked"] == 0
