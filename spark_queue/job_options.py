"""A job's options, declared once: what every ``enqueue`` of the package takes.

``Queue.enqueue``, ``Producer.enqueue`` and ``enqueue_nowait``, ``Transaction.enqueue``
(``job.transaction`` too) and ``spark_queue.outbox.enqueue`` take these as keyword
arguments (``**options: Unpack[JobOptions]``), so a type checker holds every call to the
same names and types; their defaults are the fields of
:class:`~spark_queue.store.queues.queue_jobs.NewJob`, the one job record
(``tests/store/queues/test_job_options.py`` keeps the two in step). Standard library
only: ``spark_queue.outbox`` imports it in processes that never load apsw.
"""

from __future__ import annotations

from typing import TypedDict


class JobOptions(TypedDict, total=False):
    """How one job is enqueued; every key optional (defaults: NewJob's)."""

    #: claimed before lower ones (``priority DESC, available_at, id``); default 0
    priority: int
    #: held back this long before it can be claimed; default 0
    delay_ms: int
    #: dropped if not done this long after enqueue; default None (never)
    ttl_ms: int | None
    #: unique per queue: a duplicate enqueue returns the original job's id; default None
    idempotency_key: str | None
    #: attempts before the dead letters; default None (the queue's setting)
    max_attempts: int | None


#: The names, for the callers that check what they were given (``outbox``).
JOB_OPTION_NAMES = tuple(JobOptions.__annotations__)
