"""Run a handler function over a queue: claim, heartbeat, ack/nack, graceful shutdown.

::

    def send_email(job):            # raises to fail the job
        deliver(job.payload)

    Worker("app.sqlite", "emails", send_email, concurrency=4).run()

or ``sqliteq worker app.sqlite mymodule:send_email --queue emails --concurrency 4``.

Threads: ``concurrency`` slot threads each open their own
:class:`~spark_queue.store.Store` (a connection never crosses threads), claim
up to ``batch_size`` jobs, run the handler on each in turn and ack the batch;
a handler that raises anything (any ``BaseException``, ``SystemExit`` and
``KeyboardInterrupt`` included) nacks the job with its traceback as the error
(retry with backoff, dead letters at max attempts), and the worker goes on:
:mod:`spark_queue.worker.task` is that policy, in one place: it turns a handler's
outcome, or a stop, into the action (ack, nack, release) the loop carries out.
One heartbeat thread extends the
leases of every claimed, unacked job every ``heartbeat_ms`` (a third of the
lease by default), so long jobs keep their lease. A housekeeping thread
(:class:`spark_queue.store.Housekeeper`) applies the store's retention, dead-letter
retention, the TTL sweep and the WAL bound when they are due, one process of the store
at a time (docs/operations.md).

Delivery is at-least-once: a job whose worker dies is claimed again after its
lease expires. Handlers should be idempotent. A handler whose effects live in the
store's file writes them through ``job.transaction`` (:class:`WorkerJob`): they commit
with the job's ack in one transaction, exactly once, and a handler whose lease was lost
commits nothing (:mod:`.job_transaction`, docs/transactions.md).

Idle slots wait by watching ``PRAGMA data_version`` (it changes when any
other connection commits) with a back-off from 1 ms to 50 ms, and claim at
least every ``idle_poll_max_ms`` so delayed jobs and expired leases are picked
up without a write to wake them.

Held slots (the queue is paused, at its ``max_leased``, or out of rate-limit
tokens: see :mod:`spark_queue.store.queues.controls`) do not claim: they read
the queue's :meth:`~spark_queue.store.Queue.admission` and sleep until it may
have changed, that is until another connection commits (an ack frees a slot, a
resume or a new setting lands) or until the time it names passes (the next
token, the earliest lease expiry), at most ``idle_poll_max_ms``. Each look is
one read, never the write lock, and a refused claim writes nothing, so held
workers do not wake each other.

Shutdown: SIGTERM or SIGINT (handlers only set a flag) or :meth:`Worker.stop`
stops claiming; claimed jobs not started yet are released at once (their
attempt not counted); running jobs get ``grace_ms`` to finish and be acked.
When the grace period ends, jobs still running are nacked at once with an
error saying so (the attempt counted: a job that hangs every time dies at max
attempts with that error), ``stats.interrupted`` counts them (the CLI exits 3)
and :meth:`Worker.run` returns, leaving the handler threads behind
as daemons: the process should exit (the CLI does). A second signal ends the
grace period at once. A busy or locked store is retried with back-off, never
fatal.

Anything else a slot or the heartbeat thread meets (a store error, a bug)
stops the worker the same way, gives back every lease still held, so the jobs
are ready at once rather than when their lease expires, and makes
:meth:`Worker.run` raise :class:`~spark_queue.errors.WorkerCrashedError`: a
worker never idles on with dead threads, nor exits as if all went well.

Each handler failure is one warning line: the job, the exception's last line,
and ``retry in ...`` or ``dead-lettered``. Before any thread starts, the worker
refuses a store it cannot write (:class:`~spark_queue.errors.ReadOnlyStoreError`)
and an unknown queue (an error listing the store's queues) unless
``create_queue`` (a typo must not make a new, forever empty queue).

Modules: :mod:`.loop` (the threads), :mod:`.task` (one job's outcome),
:mod:`.stats`, :mod:`.inflight`, :mod:`.settings`, :mod:`.handlers`.
"""

from __future__ import annotations

from spark_queue.defaults import MAX_WAIT_MS
from spark_queue.worker.handlers import load_handler
from spark_queue.worker.job_transaction import WorkerJob
from spark_queue.worker.loop import Worker
from spark_queue.worker.settings import MAX_BATCH_SIZE, MAX_LEASE_MS
from spark_queue.worker.stats import WorkerStats
from spark_queue.worker.task import Handler, run_task

__all__ = [
    "MAX_BATCH_SIZE",
    "MAX_LEASE_MS",
    "MAX_WAIT_MS",
    "Handler",
    "Worker",
    "WorkerJob",
    "WorkerStats",
    "load_handler",
    "run_task",
]
