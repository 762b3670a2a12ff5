"""Queue benchmark: enqueue and claim+ack, against bare apsw SQL and two peer queues.

``python -m benchmarks queue [--jobs N] [--peer-jobs N] [--repeats N] [--no-peers]
[--only SECTION ...] [--baseline-tree DIR]``

Paths, side by side in one run, each on a fresh file in a temp directory:

- ``spark_queue``: the public API (``Queue.enqueue_many``, ``claim``, ``ack_many``),
  each call one transaction, payloads encoded, ids and Job objects returned.
- ``raw apsw``: the same statements on the same schema and pragmas with
  pre-built parameter tuples and no Python objects per job: the limit.
- ``persist-queue`` (``SQLiteAckQueue``, JSON serializer) and ``litequeue``:
  neither has batch claim or batch ack, so their "batch" is B single calls
  (litequeue's B ``done`` calls share one transaction; persist-queue commits
  every call). Their rates use ``--peer-jobs`` jobs, since they are slower.

Enqueue is 100 jobs per transaction (persist-queue commits every put).
Claim+ack drains a pre-filled queue (filling is not timed). The backlog rows
keep 1,000 or 100,000 jobs waiting (each round refills 128, untimed, then
claims and acks 128, timed): the claim index keeps claim cost independent of
the backlog.

The controls section drains the same queue with each queue control set but
never binding (a cap and a bucket far above what one drain takes), against
no control: the cost of enforcing them in the claim transaction. With
``--baseline-tree DIR`` (a checkout of another commit) it also runs the plain
claim(128)+ack drain with that tree's code and this one's, alternating, each
in a fresh process: the before/after of a change to the claim path.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from benchmarks.report import best_of, now_ms, print_table
from spark_queue.store import TEXT, Store

RAW = "raw apsw (the limit)"
OURS = "spark_queue"
SECTIONS = ("enqueue", "claim-ack", "backlog", "controls")
NO_CONTROL = "no control set"
# The raw baseline's statements: the SQL the store's own enqueue and claim run
# (store/queues/queue_jobs.py, claims.py), without the checks and bookkeeping around them.
_INSERT_JOB = (
    "INSERT INTO sq_jobs (queue_id, priority, available_at, max_attempts, expires_at, "
    "idempotency_key, enqueued_ms, value, value_type) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_CLAIM_JOBS = (
    "UPDATE sq_jobs SET lease_token = ?, lease_expires_at = ?, attempts = attempts + 1 "
    "WHERE id IN (SELECT id FROM sq_jobs WHERE queue_id = ? AND available_at <= ? "
    "AND (lease_token IS NULL OR lease_expires_at <= ?) "
    "AND (expires_at IS NULL OR expires_at > ?) "
    "ORDER BY priority DESC, available_at, id LIMIT ?) "
    "RETURNING id, priority, attempts, max_attempts, enqueued_ms, expires_at, "
    "idempotency_key, value, value_type, last_error"
)

# Settings that never bind in one drain: what is measured is their bookkeeping.
CONTROL_CASES: list[tuple[str, dict[str, Any]]] = [
    (NO_CONTROL, {}),
    ("max_leased 1,000,000 (never reached)", {"max_leased": 1_000_000}),
    ("rate_limit_per_s 1e9, burst 1e9 (never empty)",
     {"rate_limit_per_s": 1e9, "rate_burst": 10**9}),
    ("both", {"max_leased": 1_000_000, "rate_limit_per_s": 1e9, "rate_burst": 10**9}),
]

# Run by --baseline-tree in a fresh process per tree: only API both trees have.
_DRAIN_SCRIPT = """
import os, sys, time
import spark_queue
from spark_queue.store import Store
path, jobs, payload, tree = sys.argv[1], int(sys.argv[2]), "x" * int(sys.argv[3]), sys.argv[4]
if not spark_queue.__file__.startswith(os.path.join(tree, "")):
    sys.exit(f"imported {spark_queue.__file__}, not the code of {tree}")
with Store(path) as store:
    q = store.queue("bench")
    for start in range(0, jobs, 1000):
        q.enqueue_many([payload] * min(1000, jobs - start))
    started, done = time.perf_counter(), 0
    while True:
        claimed = q.claim(128)
        if not claimed:
            break
        done += len(q.ack_many(claimed).done)
    print(done / (time.perf_counter() - started))
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", type=int, default=100_000, help="jobs per measured run")
    parser.add_argument(
        "--peer-jobs",
        type=int,
        default=5_000,
        help="jobs per run for persist-queue and litequeue (they are slower)",
    )
    parser.add_argument("--payload-bytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--no-peers", action="store_true", help="skip persist-queue and litequeue")
    parser.add_argument(
        "--only", nargs="+", choices=SECTIONS, default=list(SECTIONS), help="run these sections"
    )
    parser.add_argument(
        "--baseline-tree",
        metavar="DIR",
        help="a checkout of another commit: compare its claim(128)+ack with this tree's",
    )


def run(args: argparse.Namespace) -> int:
    workdir = tempfile.mkdtemp(prefix="sq-bench-queue-")
    try:
        _Bench(args, workdir).run()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


class _Bench:
    def __init__(self, args: argparse.Namespace, workdir: str) -> None:
        self.args = args
        self.workdir = workdir
        self.counter = 0
        self.payload = "x" * args.payload_bytes
        self.opened: list[Store] = []

    def path(self, suffix: str = ".sqlite") -> str:
        self.counter += 1
        return os.path.join(self.workdir, f"b{self.counter}{suffix}")

    def rate(self, setup: Callable[[], object], body: Callable[[object], int]) -> float:
        """Best rate of ``body``; stores the setups opened are closed afterwards, untimed
        (closing the last connection checkpoints the WAL)."""
        try:
            return best_of(self.args.repeats, setup, body)
        finally:
            self.close_stores()

    def interleaved(
        self, cases: list[tuple[Callable[[], Any], Callable[[Any], int]]]
    ) -> list[float]:
        """Best rate of each ``(setup, body)``, running the cases in turn on every
        repeat so that a change in machine load hits them all alike."""
        best = [0.0] * len(cases)
        for _ in range(self.args.repeats):
            for i, (setup, body) in enumerate(cases):
                best[i] = max(best[i], best_of(1, setup, body))
                self.close_stores()
        return best

    def new_store(self) -> Store:
        store = Store(self.path())
        self.opened.append(store)
        return store

    def close_stores(self) -> None:
        while self.opened:
            self.opened.pop().close()

    # -- setups ------------------------------------------------------------------
    def filled_store(self, jobs: int) -> Store:
        store = self.new_store()
        q = store.queue("bench")
        batch = [self.payload] * 1000
        for start in range(0, jobs, 1000):
            q.enqueue_many(batch[: min(1000, jobs - start)])
        return store

    def raw_rows(self, n: int, queue_id: int) -> list[tuple]:
        now = now_ms()
        return [(queue_id, 0, now, None, None, None, now, self.payload, TEXT)] * n

    # -- enqueue -----------------------------------------------------------------
    def enqueue(self) -> list[tuple[str, float, str]]:
        n = self.args.jobs
        batch = [self.payload] * 100

        def ours(store: Store) -> int:
            q = store.queue("bench")
            for _ in range(n // 100):
                q.enqueue_many(batch)
            return n // 100 * 100

        def raw_setup() -> tuple[Store, list[tuple]]:
            store = self.new_store()
            return store, self.raw_rows(100, store.queue("bench").configure().id)

        def raw(state: tuple[Store, list[tuple]]) -> int:
            store, rows = state
            conn = store.conn
            for _ in range(n // 100):
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(_INSERT_JOB, rows)
                conn.execute("COMMIT")
            return n // 100 * 100

        ours_rate, raw_rate = self.interleaved([(self.new_store, ours), (raw_setup, raw)])
        rows = [(OURS, ours_rate, RAW), (RAW, raw_rate, RAW)]
        if not self.args.no_peers:
            rows += self.peer_enqueue()
        return rows

    def peer_enqueue(self) -> list[tuple[str, float, str]]:
        from litequeue import LiteQueue
        from persistqueue import SQLiteAckQueue

        n = self.args.peer_jobs

        def pq(q: SQLiteAckQueue) -> int:
            for _ in range(n):
                q.put(self.payload)
            return n

        def lq(q: LiteQueue) -> int:
            for _ in range(n // 100):
                with q.transaction("IMMEDIATE"):
                    for _ in range(100):
                        q.put(self.payload)
            return n // 100 * 100

        return [
            ("persist-queue (commits every put)", self.rate(self.persist_queue, pq), RAW),
            ("litequeue", self.rate(lambda: LiteQueue(self.path()), lq), RAW),
        ]

    def persist_queue(self):
        from persistqueue import SQLiteAckQueue
        from persistqueue.serializers import json as pq_json

        q = SQLiteAckQueue(self.path(".pq"), serializer=pq_json)
        # Same durability as ours (WAL + synchronous=NORMAL): its default FULL
        # fsyncs every commit and would measure the disk, not the queue.
        for conn in {id(c): c for c in (q._putter, q._getter)}.values():
            conn.execute("PRAGMA synchronous=NORMAL")
        return q

    # -- claim + ack -------------------------------------------------------------
    def claim_ack(self, batch: int) -> list[tuple[str, float, str]]:
        n = self.args.jobs
        ours_rate, raw_rate, fused_rate = self.interleaved(
            [
                (lambda: self.filled_store(n), self._ours_drain(batch)),
                (lambda: self.filled_store(n), self._raw_drain(batch)),
                (lambda: self.filled_store(n), self._ours_fused(batch)),
            ]
        )
        rows = [(OURS, ours_rate, RAW), (RAW, raw_rate, RAW)]
        rows.append((f"{OURS} ack_and_claim (1 tx per batch)", fused_rate, RAW))
        if not self.args.no_peers:
            rows += self.peer_claim_ack(batch)
        return rows

    @staticmethod
    def _ours_drain(batch: int, limit: int | None = None) -> Callable[[Store], int]:
        def body(store: Store) -> int:
            done = 0
            q = store.queue("bench")
            while limit is None or done < limit:
                jobs = q.claim(batch)
                if not jobs:
                    break
                done += len(q.ack_many(jobs).done)
            return done

        return body

    @staticmethod
    def _ours_fused(batch: int) -> Callable[[Store], int]:
        """What the worker does: ack a batch and claim the next in one transaction."""

        def body(store: Store) -> int:
            q = store.queue("bench")
            done = 0
            jobs = q.claim(batch)
            while jobs:
                acked, jobs = q.ack_and_claim(jobs, batch)
                done += len(acked.done)
            return done

        return body

    @staticmethod
    def _raw_drain(batch: int, limit: int | None = None) -> Callable[[Store], int]:
        def body(store: Store) -> int:
            conn = store.conn
            qid = store.queue("bench").config().id
            done = 0
            while limit is None or done < limit:
                now = now_ms()
                token = secrets.randbits(63) or 1
                conn.execute("BEGIN IMMEDIATE")
                ids = [
                    row[0]
                    for row in conn.execute(
                        _CLAIM_JOBS, (token, now + 30_000, qid, now, now, now, batch)
                    )
                ]
                conn.execute("COMMIT")
                if not ids:
                    break
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(
                    "DELETE FROM sq_jobs WHERE id = ? AND lease_token = ?",
                    [(job_id, token) for job_id in ids],
                )
                conn.execute("COMMIT")
                done += len(ids)
            return done

        return body

    def peer_claim_ack(self, batch: int) -> list[tuple[str, float, str]]:
        from litequeue import LiteQueue
        from persistqueue import SQLiteAckQueue

        n = self.args.peer_jobs

        def pq_setup() -> SQLiteAckQueue:
            q = self.persist_queue()
            for _ in range(n):
                q.put(self.payload)
            return q

        def pq(q: SQLiteAckQueue) -> int:
            done = 0
            while True:
                items = []
                for _ in range(batch):
                    with contextlib.suppress(Exception):
                        items.append(q.get(block=False, raw=True))
                        continue
                    break
                if not items:
                    return done
                for item in items:
                    q.ack(id=item["pqid"])
                done += len(items)

        def lq_setup() -> LiteQueue:
            q = LiteQueue(self.path())
            for _ in range(n // 100):
                with q.transaction("IMMEDIATE"):
                    for _ in range(100):
                        q.put(self.payload)
            return q

        def lq(q: LiteQueue) -> int:
            done = 0
            while True:
                messages = []
                for _ in range(batch):
                    message = q.pop()
                    if message is None:
                        break
                    messages.append(message)
                if not messages:
                    return done
                with q.transaction("IMMEDIATE"):
                    for message in messages:
                        q.done(message.message_id)
                done += len(messages)

        return [
            (f"persist-queue ({batch} gets + {batch} acks)", self.rate(pq_setup, pq), RAW),
            (f"litequeue ({batch} pops + {batch} dones/tx)", self.rate(lq_setup, lq), RAW),
        ]

    # -- backlog -----------------------------------------------------------------
    def backlog(self) -> list[tuple[str, float, str]]:
        """Steady state at a constant backlog: each round enqueues 128 jobs (untimed),
        then claims 128 and acks them (timed), so the queue keeps its size. The four
        cases run in turn on every repeat."""
        rounds = max(100, self.args.jobs // 1000)
        cases = [
            (label, waiting, drain(128, 128))
            for label, drain in ((OURS, self._ours_drain), ("raw apsw", self._raw_drain))
            for waiting in (1_000, 100_000)
        ]
        best = [0.0] * len(cases)
        for _ in range(max(self.args.repeats, 3)):
            for i, (_, waiting, claim_ack) in enumerate(cases):
                best[i] = max(best[i], self._steady_once(waiting, rounds, claim_ack))
        return [
            (f"{label}, {waiting:,} waiting", rate, f"{label}, 1,000 waiting")
            for (label, waiting, _), rate in zip(cases, best, strict=True)
        ]

    def _steady_once(self, waiting: int, rounds: int, claim_ack: Callable[[Store], int]) -> float:
        refill = [self.payload] * 128
        store = self.filled_store(waiting)
        q = store.queue("bench")
        elapsed, jobs = 0.0, 0
        for _ in range(rounds):
            q.enqueue_many(refill)
            started = time.perf_counter()
            jobs += claim_ack(store)
            elapsed += time.perf_counter() - started
        self.close_stores()
        return jobs / elapsed

    # -- controls ----------------------------------------------------------------
    def controls(self) -> list[tuple[str, float, str]]:
        """claim(128)+ack with each control set but never binding, all cases in turn."""

        def setup(settings: dict) -> Store:
            store = self.filled_store(self.args.jobs)
            store.queue("bench").configure(**settings)
            return store

        rates = self.interleaved(
            [(partial(setup, settings), self._ours_drain(128)) for _, settings in CONTROL_CASES]
        )
        return [
            (label, rate, NO_CONTROL)
            for (label, _), rate in zip(CONTROL_CASES, rates, strict=True)
        ]

    def trees(self, baseline: str) -> list[tuple[str, float, str]]:
        """claim(128)+ack on ``baseline``'s code and this tree's, alternating fresh processes."""
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        labels = {baseline: f"baseline tree ({baseline})", here: "this tree"}
        best = dict.fromkeys(labels, 0.0)
        for repeat in range(max(self.args.repeats, 3)):
            # ABBA: the tree that runs second in a round must not always be the same one.
            for tree in list(labels)[:: 1 if repeat % 2 == 0 else -1]:
                env = dict(os.environ, PYTHONPATH=tree)
                # cwd: `python -c` puts it first on sys.path, ahead of PYTHONPATH.
                out = subprocess.run(
                    [sys.executable, "-c", _DRAIN_SCRIPT, self.path(), str(self.args.jobs),
                     str(self.args.payload_bytes), tree],
                    env=env, cwd=self.workdir, capture_output=True, text=True,
                )
                if out.returncode != 0:
                    raise RuntimeError(f"the drain in {tree} failed: {out.stderr.strip()}")
                best[tree] = max(best[tree], float(out.stdout))
        return [(labels[tree], rate, labels[baseline]) for tree, rate in best.items()]

    def run(self) -> None:
        started = time.perf_counter()
        only = set(self.args.only)
        print(
            f"queue benchmark: {self.args.jobs:,} jobs per run ({self.args.peer_jobs:,} for "
            f"peers), {self.args.payload_bytes}-byte text payloads, best of "
            f"{self.args.repeats}; rates in jobs/s"
        )
        if "enqueue" in only:
            print_table("enqueue, 100 jobs per transaction", self.enqueue())
        if "claim-ack" in only:
            for batch in (32, 128):
                print_table(f"claim-batch({batch}) + ack-batch", self.claim_ack(batch))
        if "backlog" in only:
            print_table("claim-batch(128) + ack-batch at a constant backlog", self.backlog())
        if "controls" in only:
            print_table("claim-batch(128) + ack-batch, queue controls set", self.controls())
            if self.args.baseline_tree:
                print_table(
                    "claim-batch(128) + ack-batch, another tree's code vs this one's",
                    self.trees(os.path.abspath(self.args.baseline_tree)),
                )
        print(f"\n(total {time.perf_counter() - started:.0f} s)")
