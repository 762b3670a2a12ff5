"""``job.transaction``: a handler's writes commit with its job's ack, or not at all.

A Worker hands each handler a :class:`WorkerJob`: the claimed
:class:`~spark_queue.store.Job` (a subclass: every field and ``isinstance`` hold) with one
more attribute, ``transaction``. The first use opens ``store.transaction()`` on the slot's
own connection (BEGIN IMMEDIATE: the store's write lock, held until the handler's job is
settled) and returns that Transaction; later uses return the same one. When the handler
returns, the slot acks the job INSIDE that transaction and commits: the handler's rows,
events and jobs and the ack are one commit, so a kill before it keeps none of them and the
job runs again, a kill after it keeps all and the job is done (exactly once for what the
handler writes in the store's file). If the lease was lost before the handler took the
transaction (it expired and another worker claimed the job), the ack finds a stale token
and the transaction rolls back: a stale handler commits nothing (fencing). A handler that
raises rolls its transaction back before the job is nacked. A handler that never touches
``job.transaction`` costs nothing and keeps at-least-once, its ack batched as before.
"""

from __future__ import annotations

from spark_queue.errors import StaleLeaseError
from spark_queue.store import Job, Store, Transaction


class WorkerJob(Job):
    """A claimed job as a Worker's handler gets it: a :class:`~spark_queue.store.Job` plus
    :attr:`transaction`. Annotate a handler's argument with it to type ``job.transaction``."""

    _held: HeldTransaction

    @property
    def transaction(self) -> Transaction:
        """The transaction this job's ack commits in, opened on first use (see the module)."""
        return self._held.take()


class HeldTransaction:
    """The transaction one job's handler may take, and how the slot settles it."""

    __slots__ = ("store", "tx")

    def __init__(self, store: Store) -> None:
        self.store = store
        self.tx: Transaction | None = None

    def job(self, job: Job) -> WorkerJob:
        """``job`` as its handler gets it, with this as its ``transaction``."""
        handed = WorkerJob(*job)
        handed._held = self
        return handed

    def take(self) -> Transaction:
        if self.tx is None:
            tx = self.store.transaction()
            self.tx = tx.__enter__()
        return self.tx

    def commit_with_ack(self, queue: str, job: Job) -> bool:
        """Ack ``job`` in the taken transaction and commit both; False, with everything
        rolled back, if its lease was lost first."""
        tx, self.tx = self.tx, None
        assert tx is not None, "commit_with_ack without a taken transaction"
        try:
            tx.ack(queue, job)
        except StaleLeaseError as exc:
            tx.__exit__(type(exc), exc, exc.__traceback__)
            return False
        except BaseException as exc:
            tx.__exit__(type(exc), exc, exc.__traceback__)
            raise
        tx.__exit__(None, None, None)
        return True

    def roll_back(self) -> None:
        """Undo what the handler wrote (it raised, or the worker stops): nothing commits."""
        tx, self.tx = self.tx, None
        if tx is not None:
            undone = RuntimeError("the handler did not finish")
            tx.__exit__(RuntimeError, undone, None)
