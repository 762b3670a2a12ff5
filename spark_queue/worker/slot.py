"""A slot's work: claim a batch, run the handler on each job, carry out what
:mod:`spark_queue.worker.task` decides, ack the batch; wait while the queue is idle or
holds claims back.

The loop and lifecycle (threads, signals, supervision, shutdown) are
:mod:`spark_queue.worker.loop`'s; a slot is handed what it needs from there (the stop
flag, the jobs held, the tally, the ``on_wait`` callback) and never calls back into it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from spark_queue.store import Job, QueueStats
from spark_queue.worker.inflight import InFlight
from spark_queue.worker.job_transaction import HeldTransaction
from spark_queue.worker.queue_link import QueueLink
from spark_queue.worker.stats import Tally
from spark_queue.worker.task import Action, Handler, held_at_stop, outcome_text, task_action

log = logging.getLogger("spark_queue.worker")


@dataclass(frozen=True)
class Slot:
    """What every slot thread of one worker runs, on a :class:`QueueLink` of its own."""

    queue: str
    handler: Handler
    batch_size: int
    idle_poll_max_ms: int
    until_empty: bool
    # Called from idle slots (any thread) with the stats that kept until_empty from
    # exiting: the CLI shows delayed jobs waited for.
    on_wait: Callable[[QueueStats], None] | None
    stopping: threading.Event
    inflight: InFlight
    tally: Tally

    def run(self, link: QueueLink) -> None:
        """Claim and work until ``stopping`` is set or, with ``until_empty``, the queue is
        drained; claimed jobs not started when the stop comes are released."""
        jobs: list[Job] = []
        while not self.stopping.is_set():
            if not jobs:
                jobs = link.claim(self.batch_size)
            if not jobs:
                if self._held_wait(link):
                    continue
                if self.until_empty and self._queue_drained(link):
                    return
                # Another connection's commit may have brought work; else look again
                # for delayed jobs and expired leases.
                link.wait_for_commit(self.idle_poll_max_ms, self.stopping)
                continue
            self.inflight.add(jobs)
            done: list[Job] = []
            for position, job in enumerate(jobs):
                if self.stopping.is_set():
                    self.carry_out(link, jobs[position:], held_at_stop("claimed", ""))
                    break
                self.inflight.mark(job, "running")
                held = HeldTransaction(link.store)
                action = task_action(self.handler, held.job(job))
                if held.tx is not None:  # the handler took job.transaction
                    if action.kind == "ack":
                        self._commit_with_ack(held, job)
                        continue
                    held.roll_back()
                if action.kind == "ack":  # with the rest of the batch, below
                    self.inflight.mark(job, "finished")
                    done.append(job)
                else:
                    self.carry_out(link, [job], action)
            jobs = []
            if done:
                jobs = self._ack(link, done)
        if jobs:  # claimed together with the last ack, then asked to stop: never started
            self.carry_out(link, jobs, held_at_stop("claimed", ""))

    def carry_out(self, link: QueueLink, jobs: list[Job], action: Action) -> int:
        """Release or nack ``jobs`` as ``action`` says (acks go in batches, see
        :meth:`_ack`); the number of jobs given back."""
        if action.kind == "release":
            result = link.release(jobs, count_attempt=action.count_attempt)
            self.inflight.discard(jobs)
            self.tally.count(released=len(result.done))
            return len(result.done)
        nacked = link.nack(jobs, action.error, delay_ms=action.delay_ms)
        self.inflight.discard(jobs)
        if action.interrupted:
            self.tally.nacked(nacked, failed=0, interrupted=len(jobs))
        else:
            self.tally.nacked(nacked)
        for job in jobs:
            if action.interrupted:
                log.warning(
                    "job %d of queue %r was still running at shutdown (attempt %d); %s",
                    job.id, self.queue, job.attempts,
                    "dead-lettered" if job.id in nacked.dead else "ready again",
                )
            else:
                log.warning(
                    "job %d of queue %r failed (attempt %d): %s; %s",
                    job.id, self.queue, job.attempts, action.line, outcome_text(nacked),
                )
        return len(nacked.retried) + len(nacked.dead)

    def _ack(self, link: QueueLink, done: list[Job]) -> list[Job]:
        """Ack a finished batch and, unless stopping, claim the next in the same transaction."""
        claimed: list[Job] = []
        if self.stopping.is_set():
            result = link.ack(done)
        else:
            result, claimed = link.ack_and_claim(done, self.batch_size)
        self.inflight.discard(done)
        self.tally.count(acked=len(result.done), lost=len(result.rejected))
        if result.rejected:
            log.warning(
                "lost the lease of jobs %s before ack: they will run again", result.rejected
            )
        return claimed

    def _commit_with_ack(self, held: HeldTransaction, job: Job) -> None:
        """Ack ``job`` in the transaction its handler took, committing both (one job, one
        commit: spark_queue/worker/job_transaction.py); a lost lease commits nothing."""
        acked = held.commit_with_ack(self.queue, job)
        self.inflight.discard([job])
        self.tally.count(acked=int(acked), lost=int(not acked))
        if not acked:
            log.warning(
                "lost the lease of job %d before its transaction committed: nothing its "
                "handler wrote was kept, and it will run again", job.id,
            )

    def _queue_drained(self, link: QueueLink) -> bool:
        stats = link.stats()
        drained = stats.ready + stats.leased + stats.delayed == 0
        if not drained and self.on_wait is not None:
            self.on_wait(stats)
        return drained

    def _held_wait(self, link: QueueLink) -> bool:
        """If the queue holds claims back, wait until that may have changed; True if it did."""
        admission = link.admission()
        if admission.held_by is None:
            return False
        self.tally.count(held=1)
        # A pause is an operator's act worth a line; limits are hit all the time.
        log.log(
            logging.INFO if admission.held_by == "paused" else logging.DEBUG,
            "queue %r holds claims back (%s): waiting",
            self.queue,
            admission.held_by,
        )
        while admission.held_by is not None and not self.stopping.is_set():
            wait_ms = self.idle_poll_max_ms
            if admission.retry_after_ms is not None:
                wait_ms = min(wait_ms, admission.retry_after_ms)
            link.wait_for_commit(wait_ms, self.stopping)
            admission = link.admission()
        return True
