"""``python -m benchmarks crashes``: exactly once under SIGKILL, outside Spark.

Two runs on fresh store files, each a child process killed with SIGKILL at random
moments and started again, then left to finish:

- consume -> transform -> produce (the recipe of docs/transactions.md): each child reads
  topic ``inputs`` from consumer ``xform``'s saved offset and, per batch, writes a business
  row, an output event and a job per input and the new offset in ONE
  ``store.transaction()``. Checked: exactly one row, one event, one job per input, and the
  saved offset at the end of ``inputs``.
- a worker whose handler writes one row per job through ``job.transaction`` (its rows
  commit with its acks). Checked: exactly one row per job, the queue empty, no dead
  letters. With ``--worker-plain`` the same run with a handler that writes on a
  connection of its own (no transaction taken: at-least-once) reports its duplicates.

A kill lands after the child's first progress since the last kill (waited for, never a
fixed sleep) plus a random 0-``--jitter-ms`` ms. The slow tests
(tests/store/test_transaction_kills.py, tests/worker/test_job_transaction_kills.py) run
the same functions with a few hundred inputs.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from benchmarks.results import record
from spark_queue.store import Store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONSUMER, INPUTS, OUTPUTS, FOLLOWUPS, JOBS = "xform", "inputs", "outputs", "followups", "jobs"
# The worker's lease: short, so a killed child's jobs come back soon.
CHILD_LEASE_MS = 300


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inputs", type=int, default=10_000,
                        help="consume run: input events")
    parser.add_argument("--consume-kills", type=int, default=50)
    parser.add_argument("--batch", type=int, default=20,
                        help="consume run: inputs per transaction")
    parser.add_argument("--jobs", type=int, default=5_000, help="worker run: jobs")
    parser.add_argument("--worker-kills", type=int, default=30)
    parser.add_argument("--worker-plain", action="store_true",
                        help="also run the worker with no transaction taken (at-least-once)")
    parser.add_argument("--jitter-ms", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=50)


def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    rows = []
    figures: dict[str, float | str] = {}
    with tempfile.TemporaryDirectory() as workdir:
        started = time.perf_counter()
        consume = run_consume(os.path.join(workdir, "consume.sqlite"), args.inputs,
                              args.consume_kills, args.batch, rng, args.jitter_ms)
        figures["consume seconds"] = time.perf_counter() - started
        rows.append((f"consume->produce, {args.inputs:,} inputs", consume["kills"],
                     consume["duplicates"], "exactly once"))
        started = time.perf_counter()
        worker = run_worker(os.path.join(workdir, "worker.sqlite"), args.jobs,
                            args.worker_kills, rng, args.jitter_ms, transaction=True)
        figures["worker seconds"] = time.perf_counter() - started
        rows.append((f"worker, job.transaction, {args.jobs:,} jobs", worker["kills"],
                     worker["duplicates"], "exactly once"))
        if args.worker_plain:
            plain = run_worker(os.path.join(workdir, "plain.sqlite"), args.jobs,
                               args.worker_kills, rng, args.jitter_ms, transaction=False)
            rows.append((f"worker, no transaction, {args.jobs:,} jobs", plain["kills"],
                         plain["duplicates"], "at least once"))
            figures["plain worker duplicates"] = plain["duplicates"]
    figures.update({"consume kills": consume["kills"], "worker kills": worker["kills"],
                    "consume duplicates": consume["duplicates"],
                    "worker duplicates": worker["duplicates"]})
    print(f"\ncrashes: SIGKILL at random, restart (load average {os.getloadavg()[0]:.1f})")
    print(f"{'run':<44} {'kills':>6}  {'duplicates':>10}  held")
    for label, kills, dups, what in rows:
        print(f"{label:<44} {kills:>6}  {dups:>10}  {what}")
    record("crashes", figures)


# -- consume -> transform -> produce ---------------------------------------------------
def consume_child(path: str, batch: int) -> None:
    """The recipe of docs/transactions.md, until the input topic is drained."""
    with Store(path) as store:
        while True:
            with store.transaction() as tx:
                start = tx.committed_offsets(CONSUMER).get(INPUTS, 0)
                events = tx.read(INPUTS, start, limit=batch)
                if not events:
                    return
                for event in events:
                    doubled = event.value["n"] * 2
                    tx.execute("INSERT INTO results (input, doubled) VALUES (?, ?)",
                               (event.offset, doubled))
                    tx.publish(OUTPUTS, {"input": event.offset, "doubled": doubled})
                    tx.enqueue(FOLLOWUPS, {"input": event.offset})
                tx.commit_offsets(CONSUMER, {INPUTS: events[-1].offset + 1})


def run_consume(path: str, inputs: int, kills: int, batch: int, rng: random.Random,
                jitter_ms: float) -> dict[str, int]:
    with Store(path) as store:
        store.conn.execute("CREATE TABLE results (input INTEGER NOT NULL, doubled INTEGER)")
        store.publish_many(INPUTS, [{"n": i} for i in range(inputs)])
        store.topic(OUTPUTS).create()

        def progress() -> int:
            return store.committed_offsets(CONSUMER).get(INPUTS, 0)

        code = f"from benchmarks.crashes import consume_child; consume_child({path!r}, {batch})"
        done = _chaos(code, progress, inputs, kills, rng, jitter_ms)
        rows = [int(v) for v in store.conn.execute(  # type: ignore[arg-type]  # apsw: any
            "SELECT count(*), count(DISTINCT input) FROM results").fetchall()[0]]
        outputs = store.read(OUTPUTS)
        jobs = store.queue(FOLLOWUPS).stats()
        found = {
            "rows": rows[0], "distinct rows": rows[1], "outputs": len(outputs),
            "distinct outputs": len({e.value["input"] for e in outputs}),
            "jobs": jobs.ready, "offset": progress(),
        }
        if set(found.values()) != {inputs}:
            raise RuntimeError(f"consume->produce is not exactly once: {found}")
        return {"kills": done, "duplicates": rows[0] - rows[1]}


# -- a worker whose handler writes through job.transaction -------------------------------
def worker_child(path: str, transaction: bool) -> None:
    from spark_queue.worker import Worker, WorkerJob

    if transaction:
        def handler(job: WorkerJob) -> None:
            job.transaction.execute("INSERT INTO done (job) VALUES (?)", (job.id,))
    else:
        own = Store(path)

        def handler(job: WorkerJob) -> None:
            own.conn.execute("INSERT INTO done (job) VALUES (?)", (job.id,))

    Worker(path, JOBS, handler, visibility_timeout_ms=CHILD_LEASE_MS, idle_poll_max_ms=20,
           until_empty=True, batch_size=10).run()


def run_worker(path: str, jobs: int, kills: int, rng: random.Random, jitter_ms: float, *,
               transaction: bool) -> dict[str, int]:
    with Store(path) as store:
        store.conn.execute("CREATE TABLE done (job INTEGER NOT NULL)")
        store.queue(JOBS).enqueue_many(range(jobs))

        def progress() -> int:
            return int(store.conn.execute(  # type: ignore[arg-type]  # apsw: any value
                "SELECT count(DISTINCT job) FROM done").fetchall()[0][0])

        code = (f"from benchmarks.crashes import worker_child; "
                f"worker_child({path!r}, {transaction})")
        done = _chaos(code, progress, jobs, kills, rng, jitter_ms)
        rows, distinct = (int(v) for v in store.conn.execute(  # type: ignore[arg-type]
            "SELECT count(*), count(DISTINCT job) FROM done").fetchall()[0])
        stats = store.queue(JOBS).stats()
        left = stats.ready + stats.leased + stats.delayed + stats.dead
        if distinct != jobs or left or (transaction and rows != jobs):
            raise RuntimeError(f"worker: {rows} rows for {distinct} of {jobs} jobs, {stats}")
        return {"kills": done, "duplicates": rows - distinct}


# -- the chaos ------------------------------------------------------------------------
def _chaos(code: str, progress: Callable[[], int], end: int, kills: int,
           rng: random.Random, jitter_ms: float) -> int:
    """Start ``code`` in a child, SIGKILL it after its next progress plus a random jitter,
    ``kills`` times (fewer if the work ends first); then let a last child finish."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    done = 0
    while done < kills:
        before = progress()
        if before >= end:
            break
        child = subprocess.Popen([sys.executable, "-c", code], env=env)
        try:
            deadline = time.monotonic() + 120
            while progress() == before and child.poll() is None:
                if time.monotonic() > deadline:
                    raise RuntimeError("the child made no progress in 120 s")
                time.sleep(0.002)
            time.sleep(rng.uniform(0, jitter_ms) / 1000)
        finally:
            if child.poll() is None:
                child.send_signal(signal.SIGKILL)
                done += 1
            child.wait()
    last = subprocess.run([sys.executable, "-c", code], env=env, timeout=600)
    if last.returncode != 0:
        raise RuntimeError(f"the last child failed ({last.returncode})")
    return done
