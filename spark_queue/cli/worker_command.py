"""The ``worker`` command: run a handler over one queue (:class:`spark_queue.worker.Worker`)."""

from __future__ import annotations

import argparse

from spark_queue import defaults
from spark_queue.cli import numbers
from spark_queue.cli.output import emit_object
from spark_queue.cli.progress import DelayedJobsWait, watching
from spark_queue.cli.store_access import common, open_store
from spark_queue.errors import OptionError, WorkerCrashedError

# Threads and jobs per claim: far beyond any use, small enough to start and to bind.
MAX_CONCURRENCY = 1024
# `worker`: stopped, but handlers were still running when the grace period ended.
EXIT_JOBS_INTERRUPTED = 3
# --batch-size: the worker allows any stored count; a command line asks for a sane one.
BATCH_SIZE_FLAG_MAX = 100_000


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("worker", help="run a handler function over a queue until interrupted")
    common(p)
    p.add_argument("handler", help="module:function, called with each job")
    p.add_argument("--queue", required=True, action="append",
                   help="the queue to work on (it must exist); once: one worker, one queue")
    p.add_argument(
        "--create", action="store_true",
        help="create the queue with default settings if it does not exist",
    )
    p.add_argument(
        "--concurrency", type=numbers.integer(1, MAX_CONCURRENCY), default=1,
        help="jobs at once (threads; default 1)",
    )
    p.add_argument(
        "--batch-size",
        type=numbers.integer(1, BATCH_SIZE_FLAG_MAX),
        default=1,
        help="jobs each thread claims (and acks) per transaction (default 1)",
    )
    p.add_argument(
        # --lease-ms: the flag's name before the lease had one name (the queue setting's).
        "--visibility-timeout-ms", "--lease-ms", dest="visibility_timeout_ms",
        type=numbers.positive_duration_ms, metavar="DURATION",
        help="lease length, a duration such as 30s or 1500ms (default: the queue's "
        "visibility_timeout_ms)",
    )
    p.add_argument(
        "--heartbeat-ms", type=numbers.positive_wait_ms, metavar="DURATION",
        help="lease extension interval, a duration such as 10s (default lease/3)",
    )
    p.add_argument(
        "--grace-ms",
        type=numbers.wait_ms,
        metavar="DURATION",
        default=defaults.WORKER_GRACE_MS,
        help="on SIGTERM/SIGINT, how long running jobs may finish (default "
        f"{defaults.WORKER_GRACE_MS // 1000}s); jobs still running then are nacked "
        "with an error saying so and the worker exits 3",
    )
    p.add_argument(
        "--idle-poll-max-ms",
        type=numbers.positive_wait_ms,
        metavar="DURATION",
        default=500,
        help="when idle, look for due jobs at least this often (default 500ms)",
    )
    p.add_argument(
        "--until-empty",
        action="store_true",
        help="exit when the queue has no ready, delayed or leased jobs",
    )
    p.set_defaults(func=cmd_worker)


def cmd_worker(args: argparse.Namespace) -> int:
    import logging

    from spark_queue.worker import Worker, load_handler

    queue = _one_queue(args.queue)
    handler = load_handler(args.handler)
    open_store(args.path).close()  # a missing file fails here with the store's message
    # Each failure, a crash and a pause are one line on stderr; -v adds tracebacks.
    level = logging.DEBUG if args.verbose else logging.INFO
    logging.getLogger("spark_queue.worker").setLevel(level)
    worker = Worker(
        args.path,
        queue,
        handler,
        concurrency=args.concurrency,
        batch_size=args.batch_size,
        visibility_timeout_ms=args.visibility_timeout_ms,
        heartbeat_ms=args.heartbeat_ms,
        grace_ms=args.grace_ms,
        idle_poll_max_ms=args.idle_poll_max_ms,
        until_empty=args.until_empty,
        create_queue=args.create,
        on_wait=_delayed_jobs_wait(queue, until_empty=args.until_empty, as_json=args.json),
    )
    try:
        stats = worker.run()
    except WorkerCrashedError:
        # The summary still says what was done before the crash; main() prints the error.
        emit_object({"queue": queue} | worker.stats.as_dict(), as_json=args.json)
        raise
    emit_object({"queue": queue} | stats.as_dict(), as_json=args.json)
    # Handlers still running when the grace period ended: their jobs were nacked, not done.
    return EXIT_JOBS_INTERRUPTED if stats.interrupted else 0


def _one_queue(given: list[str]) -> str:
    """``--queue`` once: given twice is refused, never the last one silently (rq's
    ``rq worker high default low`` habit; one worker works on one queue)."""
    if len(given) > 1:
        raise OptionError(
            f"--queue is given {len(given)} times ({', '.join(map(repr, given))}): a worker "
            "works on one queue. Run one `sqliteq worker` per queue, or put the jobs in one "
            "queue with `queue add --priority N` (higher runs first) for rq's priority order."
        )
    return given[0]


def _delayed_jobs_wait(queue: str, *, until_empty: bool, as_json: bool
                       ) -> DelayedJobsWait | None:
    """A line on stderr each time ``--until-empty`` waits for a changed number of delayed jobs."""
    stream = watching(as_json) if until_empty else None
    return None if stream is None else DelayedJobsWait(stream, queue)
