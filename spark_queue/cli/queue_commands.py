"""Queue commands: ``queue add|list|show|config|pause|resume|stats|peek|purge``, ``dlq``, ``job``,
``worker``."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from spark_queue.cli.inputs import batches, ndjson_values, open_input, parse_value
from spark_queue.cli.output import emit, emit_object
from spark_queue.cli.progress import DelayedJobsWait, watching
from spark_queue.cli.store_commands import (
    DEFAULT_BATCH_SIZE,
    common,
    open_store,
)
from spark_queue.cli.time_flags import duration_flag
from spark_queue.errors import OptionError
from spark_queue.store import NewJob, Store

STATS_COLUMNS = [
    "queue", "ready", "leased", "delayed", "dead", "oldest_ready_age_ms", "paused", "held_by"
]
JOB_COLUMNS = [
    "id",
    "state",
    "priority",
    "attempts",
    "max_attempts",
    "available_at_ms",
    "idempotency_key",
    "payload",
    "last_error",
]
SETTING_FLAGS = {
    "visibility_timeout_ms": "--visibility-timeout-ms",
    "max_attempts": "--max-attempts",
    "backoff_base_ms": "--backoff-base-ms",
    "backoff_cap_ms": "--backoff-cap-ms",
    "max_size": "--max-size",
    "idempotency_window_ms": "--idempotency-window-ms",
    "max_leased": "--max-leased",
    "rate_limit_per_s": "--rate-limit-per-s",
    "rate_burst": "--rate-burst",
    "max_payload_bytes": "--max-payload-bytes",
}
# Limits a --no-... flag switches off.
LIMIT_OFF_FLAGS = {
    "max_size": "--no-max-size",
    "max_leased": "--no-max-leased",
    "rate_limit_per_s": "--no-rate-limit",
    "rate_burst": "--no-rate-burst",
    "max_payload_bytes": "--no-max-payload-bytes",
}
# The bucket as last written: `queue show` prints the live content instead.
_INTERNAL = ("id", "name", "rate_tokens", "rate_updated_ms")


def _group(sub: argparse._SubParsersAction, name: str, help_text: str) -> Any:
    parser = sub.add_parser(name, help=help_text)
    return parser.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND")


def add_commands(sub: argparse._SubParsersAction) -> None:
    queue = _group(sub, "queue", "work queues: add jobs, inspect, configure, purge")

    p = queue.add_parser(
        "add", help="enqueue one job, or NDJSON lines (creates the store and queue if missing)"
    )
    common(p)
    p.add_argument("queue")
    p.add_argument("value", nargs="?", help="the payload (omit with --ndjson)")
    p.add_argument(
        "--value-format",
        choices=("text", "json"),
        default="text",
        help="store VALUE as text (default) or parse it as JSON",
    )
    p.add_argument("--priority", type=int, default=0, help="higher runs first (default 0)")
    p.add_argument("--delay-ms", type=int, default=0, help="hold the job back this long")
    p.add_argument("--ttl-ms", type=int, help="drop the job if not done this long after enqueue")
    p.add_argument("--idempotency-key", help="a duplicate key returns the original job id")
    p.add_argument("--max-attempts", type=int, help="override the queue's max attempts")
    p.add_argument(
        "--ndjson",
        metavar="FILE",
        help="enqueue each line of FILE ('-' for stdin) as one JSON payload",
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=DEFAULT_BATCH_SIZE,
        help=f"lines per transaction with --ndjson (default {DEFAULT_BATCH_SIZE})",
    )
    p.add_argument(
        "--wait-ms",
        type=int,
        default=0,
        help="when the queue is at max_size, wait this long for room (default: fail)",
    )
    p.set_defaults(func=cmd_queue_add)

    p = queue.add_parser("list", help="list queues with their settings and counts")
    common(p)
    p.set_defaults(func=cmd_queue_list)

    p = queue.add_parser("show", help="one queue's settings and counts")
    common(p)
    p.add_argument("queue")
    p.set_defaults(func=cmd_queue_show)

    p = queue.add_parser("config", help="create a queue or change its settings")
    common(p)
    p.add_argument("queue")
    for setting, flag in SETTING_FLAGS.items():
        if setting.endswith("_ms"):  # read by duration_flag: 30s, 1h, 7d or ms
            p.add_argument(flag, dest=setting, metavar="DURATION", help=f"set {setting}")
            continue
        kind = float if setting == "rate_limit_per_s" else int
        p.add_argument(flag, dest=setting, type=kind, help=f"set {setting}")
    for setting, flag in LIMIT_OFF_FLAGS.items():
        p.add_argument(
            flag, dest=f"no_{setting}", action="store_true", help=f"remove the {setting} limit"
        )
    p.set_defaults(func=cmd_queue_config)

    p = queue.add_parser("pause", help="stop claims (enqueues still land, leased jobs finish)")
    common(p)
    p.add_argument("queue")
    p.set_defaults(func=cmd_queue_pause, paused=True)

    p = queue.add_parser("resume", help="let claims take jobs again")
    common(p)
    p.add_argument("queue")
    p.set_defaults(func=cmd_queue_pause, paused=False)

    p = queue.add_parser("stats", help="ready/leased/delayed/dead counts and oldest ready age")
    common(p)
    p.add_argument("queue", nargs="?", help="only this queue (default: all)")
    p.set_defaults(func=cmd_queue_stats)

    p = queue.add_parser("peek", help="jobs in queue order with their state; leases nothing")
    common(p)
    p.add_argument("queue")
    p.add_argument("--limit", type=int, default=10, help="how many (default 10)")
    p.set_defaults(func=cmd_queue_peek)

    p = queue.add_parser("purge", help="delete ready and delayed jobs (or only expired ones)")
    common(p)
    p.add_argument("queue")
    p.add_argument(
        "--include-leased", action="store_true", help="also delete jobs that workers hold right now"
    )
    p.add_argument(
        "--expired", action="store_true", help="only delete jobs past their TTL (a sweep)"
    )
    p.set_defaults(func=cmd_queue_purge)

    dlq = _group(sub, "dlq", "dead letters: jobs that failed max attempts")
    p = dlq.add_parser("list", help="dead letters with their last error")
    common(p)
    p.add_argument("queue")
    p.add_argument("--limit", type=int, help="at most this many")
    p.set_defaults(func=cmd_dlq_list)
    p = dlq.add_parser("requeue", help="move dead letters back to ready (all, or these ids)")
    common(p)
    p.add_argument("queue")
    p.add_argument("ids", nargs="*", type=int, help="job ids (default: all)")
    p.set_defaults(func=cmd_dlq_requeue)
    p = dlq.add_parser("purge", help="delete dead letters (all, or these ids)")
    common(p)
    p.add_argument("queue")
    p.add_argument("ids", nargs="*", type=int, help="job ids (default: all)")
    p.set_defaults(func=cmd_dlq_purge)

    job = _group(sub, "job", "one job by id")
    p = job.add_parser("get", help="show a job (queued, leased or dead)")
    common(p)
    p.add_argument("queue")
    p.add_argument("id", type=int)
    p.set_defaults(func=cmd_job_get)
    p = job.add_parser("remove", help="delete a job (queued, leased or dead)")
    common(p)
    p.add_argument("queue")
    p.add_argument("id", type=int)
    p.set_defaults(func=cmd_job_remove)

    p = sub.add_parser("worker", help="run a handler function over a queue until interrupted")
    common(p)
    p.add_argument("handler", help="module:function, called with each job")
    p.add_argument("--queue", required=True, help="the queue to work on")
    p.add_argument("--concurrency", type=int, default=1, help="jobs at once (threads; default 1)")
    p.add_argument(
        "--batch-size",
        type=int,
        default=1,
        help="jobs each thread claims (and acks) per transaction (default 1)",
    )
    p.add_argument(
        "--lease-ms", type=int, help="lease length (default: the queue's visibility timeout)"
    )
    p.add_argument("--heartbeat-ms", type=int, help="lease extension interval (default lease/3)")
    p.add_argument(
        "--grace-ms",
        type=int,
        default=30_000,
        help="on SIGTERM/SIGINT, how long running jobs may finish (default 30000)",
    )
    p.add_argument(
        "--idle-poll-max-ms",
        type=int,
        default=500,
        help="when idle, look for due jobs at least this often (default 500)",
    )
    p.add_argument(
        "--until-empty",
        action="store_true",
        help="exit when the queue has no ready, delayed or leased jobs",
    )
    p.set_defaults(func=cmd_worker)


def cmd_queue_add(args: argparse.Namespace) -> int:
    if (args.value is None) == (args.ndjson is None):
        raise OptionError("queue add takes either a VALUE or --ndjson FILE, not both or neither.")
    if args.batch_size <= 0:
        raise OptionError(f"--batch-size must be a positive integer; got {args.batch_size}.")
    if args.wait_ms < 0:
        raise OptionError(f"--wait-ms must be >= 0; got {args.wait_ms}.")

    def job(payload: Any) -> NewJob:
        return NewJob(
            payload,
            args.priority,
            args.delay_ms,
            args.idempotency_key,
            args.max_attempts,
            args.ttl_ms,
        )

    with Store(args.path, create=True) as store:  # like `publish`: creates a missing store
        q = store.queue(args.queue)
        if args.ndjson is None:
            [job_id] = q.enqueue_many(
                [job(parse_value(args.value, args.value_format))], wait_ms=args.wait_ms
            )
            emit_object({"queue": args.queue, "id": job_id}, as_json=args.json)
            return 0
        if args.idempotency_key is not None:
            raise OptionError("--idempotency-key names one job; it cannot go with --ndjson.")
        ids: list[int] = []
        with open_input(args.ndjson) as stream:
            for batch in batches(ndjson_values(stream, args.ndjson), args.batch_size):
                ids.extend(q.enqueue_many([job(v) for v in batch], wait_ms=args.wait_ms))
    emit_object(
        {"queue": args.queue, "enqueued": len(ids), "first_id": ids[0] if ids else None},
        as_json=args.json,
    )
    return 0


def _settings(config) -> dict[str, Any]:
    return {"queue": config.name} | {
        k: v for k, v in config._asdict().items() if k not in _INTERNAL
    }


def _controls(store, queue: str) -> dict[str, Any]:
    """What holds claims back now, and the rate limit's bucket (live, not as last written)."""
    admission = store.queue(queue).admission()
    tokens = admission.rate_tokens
    return {
        "held_by": admission.held_by,
        "rate_tokens": None if tokens is None else round(tokens, 3),
    }


def _settings_and_stats(store, name: str | None = None) -> list[dict[str, Any]]:
    with store.snapshot():
        stats = {s.queue: s._asdict() for s in store.queue_stats()}
        return [
            _settings(config) | stats[config.name] | _controls(store, config.name)
            for config in store.queues()
            if name is None or config.name == name
        ]


def cmd_queue_list(args: argparse.Namespace) -> int:
    with open_store(args, readonly=True) as store:
        rows = _settings_and_stats(store)
    emit(
        rows,
        as_json=args.json,
        columns=STATS_COLUMNS
        + ["visibility_timeout_ms", "max_attempts", "max_size", "max_leased", "rate_limit_per_s"],
    )
    return 0


def cmd_queue_show(args: argparse.Namespace) -> int:
    with open_store(args, readonly=True) as store:
        store.queue(args.queue).config()  # UnknownQueueError names the queue
        [row] = _settings_and_stats(store, args.queue)
    emit_object(row, as_json=args.json)
    return 0


def cmd_queue_config(args: argparse.Namespace) -> int:
    settings = {k: getattr(args, k) for k in SETTING_FLAGS if getattr(args, k) is not None}
    for setting in [k for k in settings if k.endswith("_ms")]:
        settings[setting] = duration_flag(SETTING_FLAGS[setting], settings[setting], minimum_ms=0)
    for setting, flag in LIMIT_OFF_FLAGS.items():
        if getattr(args, f"no_{setting}"):
            if setting in settings:
                raise OptionError(f"give {SETTING_FLAGS[setting]} or {flag}, not both.")
            settings[setting] = None
    with Store(args.path, create=True) as store:
        config = store.queue(args.queue).configure(**settings)
    emit_object(_settings(config), as_json=args.json)
    return 0


def cmd_queue_pause(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        q = store.queue(args.queue)
        q.config()  # UnknownQueueError names the queue: a typo must not create one
        config = q.pause() if args.paused else q.resume()
    emit_object({"queue": config.name, "paused": config.paused}, as_json=args.json)
    return 0


def cmd_queue_stats(args: argparse.Namespace) -> int:
    with open_store(args, readonly=True) as store, store.snapshot():
        one = args.queue is not None
        stats = [store.queue(args.queue).stats()] if one else store.queue_stats()
        paused = {config.name: config.paused for config in store.queues()}
        rows = [
            s._asdict() | {"paused": paused[s.queue]} | _controls(store, s.queue) for s in stats
        ]
    emit(rows, as_json=args.json, columns=STATS_COLUMNS)
    return 0


def cmd_queue_peek(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise OptionError(f"--limit must be >= 0; got {args.limit}.")
    with open_store(args, readonly=True) as store:
        rows = [j._asdict() for j in store.queue(args.queue).peek(args.limit)]
    emit(rows, as_json=args.json, columns=JOB_COLUMNS)
    return 0


def cmd_queue_purge(args: argparse.Namespace) -> int:
    if args.expired and args.include_leased:
        raise OptionError("--expired sweeps only expired jobs; it cannot go with --include-leased.")
    with open_store(args) as store:
        q = store.queue(args.queue)
        q.config()
        deleted = q.sweep_expired() if args.expired else q.purge(include_leased=args.include_leased)
    emit_object({"queue": args.queue, "deleted": deleted}, as_json=args.json)
    return 0


def cmd_dlq_list(args: argparse.Namespace) -> int:
    with open_store(args, readonly=True) as store:
        rows = [j._asdict() for j in store.queue(args.queue).dead_letters(args.limit)]
    emit(rows, as_json=args.json, columns=["id", "attempts", "dead_ms", "payload", "last_error"])
    return 0


def cmd_dlq_requeue(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        ids = store.queue(args.queue).requeue_dead(args.ids or None)
    emit_object({"queue": args.queue, "requeued": len(ids), "ids": ids}, as_json=args.json)
    return 0


def cmd_dlq_purge(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        deleted = store.queue(args.queue).purge_dead(args.ids or None)
    emit_object({"queue": args.queue, "deleted": deleted}, as_json=args.json)
    return 0


def cmd_job_get(args: argparse.Namespace) -> int:
    with open_store(args, readonly=True) as store:
        info = store.queue(args.queue).get(args.id)
    emit_object(info._asdict(), as_json=args.json)
    return 0


def cmd_job_remove(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        state = store.queue(args.queue).remove(args.id)
    emit_object({"queue": args.queue, "id": args.id, "removed_from": state}, as_json=args.json)
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from spark_queue.worker import Worker, load_handler

    handler = load_handler(args.handler)
    open_store(args).close()  # a missing file fails here with the store's message
    logging.getLogger("spark_queue.worker").setLevel(logging.INFO)
    worker = Worker(
        args.path,
        args.queue,
        handler,
        concurrency=args.concurrency,
        batch_size=args.batch_size,
        lease_ms=args.lease_ms,
        heartbeat_ms=args.heartbeat_ms,
        grace_ms=args.grace_ms,
        idle_poll_max_ms=args.idle_poll_max_ms,
        until_empty=args.until_empty,
        on_wait=_delayed_jobs_wait(args),
    )
    stats = worker.run()
    emit_object({"queue": args.queue} | stats.as_dict(), as_json=args.json)
    return 0


def _delayed_jobs_wait(args: argparse.Namespace) -> DelayedJobsWait | None:
    """A line on stderr each time ``--until-empty`` waits for a changed number of delayed jobs."""
    stream = watching(args.json) if args.until_empty else None
    return None if stream is None else DelayedJobsWait(stream, args.queue)
