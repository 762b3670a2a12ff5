"""Queue commands: ``queue add|list|show|config|pause|resume|stats|peek|purge``, ``dlq``, ``job``,
``worker``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from spark_queue import defaults
from spark_queue.cli import numbers
from spark_queue.cli.inputs import (
    VALUE_FORMAT_HELP,
    VALUE_FORMATS,
    choose_input,
    parse_value,
    write_lines,
)
from spark_queue.cli.name_hints import require_known_queue
from spark_queue.cli.output import emit, emit_object, one_line_error
from spark_queue.cli.setting_flags import add_setting_flags, given_settings
from spark_queue.cli.store_access import common, create_flag, open_for_write, open_store
from spark_queue.errors import OptionError
from spark_queue.setting_table import QUEUE_SETTINGS

if TYPE_CHECKING:
    from spark_queue.store import QueueConfig, Store

STATS_COLUMNS = [
    "queue", "ready", "leased", "delayed", "dead", "oldest_ready_age_ms", "paused", "held_by"
]
WORKER_COLUMNS = [
    "queue", "id", "host", "pid", "concurrency", "alive", "jobs_held", "started_ms", "seen_ms",
]
JOB_LIST_COLUMNS = [
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
# The bucket as last written: `queue show` prints the live content instead.
_INTERNAL = ("id", "name", "rate_tokens", "rate_updated_ms")


def _group(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> Any:
    parser = sub.add_parser(name, help=help_text)
    return parser.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND")


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    queue = _group(sub, "queue", "work queues: add jobs, inspect, configure, purge")

    p = queue.add_parser(
        "add", help="enqueue one job, or NDJSON lines (--create: create the queue too)"
    )
    common(p)
    p.add_argument("queue", help="the queue (it must exist unless --create)")
    p.add_argument(
        "value", nargs="?",
        help="the payload; without it (or with -), each line of stdin is one job",
    )
    p.add_argument("--value-format", choices=VALUE_FORMATS, help=VALUE_FORMAT_HELP)
    create_flag(p, "queue")
    p.add_argument(
        "--priority", type=numbers.priority, default=0, help="higher runs first (default 0)"
    )
    p.add_argument(
        "--delay-ms", type=numbers.duration_ms, default=0, metavar="DURATION",
        help="hold the job back this long: 30s, 5m, 1500ms (a bare number is ms)",
    )
    p.add_argument(
        "--ttl-ms", type=numbers.positive_duration_ms, metavar="DURATION",
        help="drop the job if not done this long after enqueue: 1h, 7d",
    )
    p.add_argument("--idempotency-key", help="a duplicate key returns the original job id")
    p.add_argument(
        "--max-attempts", type=numbers.positive, help="override the queue's max attempts"
    )
    p.add_argument(
        "--ndjson",
        metavar="FILE",
        help="enqueue each line of FILE ('-' for stdin) as one JSON payload",
    )
    p.add_argument(
        "--batch-size",
        type=numbers.positive,
        metavar="N",
        help=f"lines per transaction (default {defaults.CLI_BATCH_SIZE}); lines only",
    )
    p.add_argument(
        "--wait-ms",
        type=numbers.wait_ms,
        default=0,
        metavar="DURATION",
        help="when the queue is at max_size, wait this long for room, e.g. 10s (default: fail)",
    )
    p.set_defaults(func=cmd_queue_add)

    p = queue.add_parser("list", help="list queues with their settings and counts")
    common(p)
    p.set_defaults(func=cmd_queue_list)
    # `sqliteq queues` beside `sqliteq topics`: the same table as `queue list`.
    p = sub.add_parser("queues", help="list queues with their settings and counts (= queue list)")
    common(p)
    p.set_defaults(func=cmd_queue_list)

    p = queue.add_parser(
        "show", help="one queue's settings and counts, or one job of it (also: describe)"
    )
    common(p)
    p.add_argument("queue", help="the queue's name")
    p.add_argument("job", nargs="?", type=numbers.job_id,
                   help="a job's id: show that job with the whole text of its last error")
    p.set_defaults(func=cmd_queue_show)

    p = queue.add_parser("create", help="create a queue with its settings")
    common(p)
    p.add_argument("queue", help="the queue's name")
    add_setting_flags(p, QUEUE_SETTINGS, clearable=False)
    create_flag(p)
    p.add_argument("--if-not-exists", action="store_true",
                   help="succeed without changes when the queue exists")
    p.set_defaults(func=cmd_queue_create)

    p = queue.add_parser("config", help="create a queue or change its settings")
    common(p)
    p.add_argument("queue", help="the queue's name")
    add_setting_flags(p, QUEUE_SETTINGS, clearable=True)
    create_flag(p)
    p.set_defaults(func=cmd_queue_config)

    p = queue.add_parser("pause", help="stop claims (enqueues still land, leased jobs finish)")
    common(p)
    p.add_argument("queue", help="the queue's name")
    p.set_defaults(func=cmd_queue_pause, paused=True)

    p = queue.add_parser("resume", help="let claims take jobs again")
    common(p)
    p.add_argument("queue", help="the queue's name")
    p.set_defaults(func=cmd_queue_pause, paused=False)

    p = queue.add_parser("stats", help="ready/leased/delayed/dead counts and oldest ready age")
    common(p)
    p.add_argument("queue", nargs="?", help="only this queue (default: all)")
    p.set_defaults(func=cmd_queue_stats)

    p = queue.add_parser(
        "workers",
        help="the workers of a queue (or of all): alive or lost, jobs held, since when",
    )
    common(p)
    p.add_argument("queue", nargs="?", help="only this queue (default: all)")
    p.set_defaults(func=cmd_queue_workers)

    p = queue.add_parser("peek", help="jobs in queue order with their state; leases nothing")
    common(p)
    p.add_argument("queue", help="the queue's name")
    p.add_argument("--limit", type=numbers.count, default=10, help="how many (default 10)")
    p.set_defaults(func=cmd_queue_peek)

    p = queue.add_parser("purge", help="delete ready and delayed jobs (or only expired ones)")
    common(p)
    p.add_argument("queue", help="the queue's name")
    p.add_argument(
        "--include-leased", action="store_true", help="also delete jobs that workers hold right now"
    )
    p.add_argument(
        "--expired", action="store_true", help="only delete jobs past their TTL (a sweep)"
    )
    p.set_defaults(func=cmd_queue_purge)

    dlq = _group(sub, "dlq", "dead letters: jobs that failed max attempts")
    p = dlq.add_parser(
        "list", help="dead letters with the last line of their error (all of it with --json)"
    )
    common(p)
    p.add_argument("queue", help="the queue's name")
    p.add_argument("--limit", type=numbers.count, help="at most this many")
    p.set_defaults(func=cmd_dlq_list)
    p = dlq.add_parser("requeue", help="move dead letters back to ready (all, or these ids)")
    common(p)
    p.add_argument("queue", help="the queue's name")
    p.add_argument("ids", nargs="*", type=numbers.job_id, help="job ids (default: all)")
    p.set_defaults(func=cmd_dlq_requeue)
    p = dlq.add_parser("purge", help="delete dead letters (all, or these ids)")
    common(p)
    p.add_argument("queue", help="the queue's name")
    p.add_argument("ids", nargs="*", type=numbers.job_id, help="job ids (default: all)")
    p.set_defaults(func=cmd_dlq_purge)

    job = _group(sub, "job", "one job by id")
    p = job.add_parser("get", help="show a job (queued, leased or dead)")
    common(p)
    p.add_argument("queue", help="the queue's name")
    p.add_argument("id", type=numbers.job_id, help="the job's id (as peek and dlq list show it)")
    p.set_defaults(func=cmd_job_get)
    p = job.add_parser("remove", help="delete a job (queued, leased or dead)")
    common(p)
    p.add_argument("queue", help="the queue's name")
    p.add_argument("id", type=numbers.job_id, help="the job's id (as peek and dlq list show it)")
    p.set_defaults(func=cmd_job_remove)


def cmd_queue_add(args: argparse.Namespace) -> int:
    from spark_queue.store import NewJob

    lines = choose_input("queue add", value=args.value, ndjson=args.ndjson,
                         value_format=args.value_format, batch_size=args.batch_size)

    def job(payload: Any) -> NewJob:
        return NewJob(
            payload,
            args.priority,
            args.delay_ms,
            args.idempotency_key,
            args.max_attempts,
            args.ttl_ms,
        )

    if lines is not None and args.idempotency_key is not None:
        raise OptionError("--idempotency-key names one job; it cannot go with lines "
                          "(--ndjson, or stdin without VALUE).")
    with open_for_write(args.path, "queue add", create=args.create) as store:
        if not args.create:
            require_known_queue(store, args.queue, create_hint=(
                f"make it with `sqliteq queue create {args.path} {args.queue}` or add "
                "--create"))
        q = store.queue(args.queue)
        if lines is None:
            [job_id] = q.enqueue_many(
                [job(parse_value(args.value, args.value_format or "auto"))],
                wait_ms=args.wait_ms,
            )
            emit_object({"queue": args.queue, "id": job_id}, as_json=args.json)
            return 0
        ids: list[int] = []

        def write(batch: list[tuple[str | None, Any]]) -> None:
            ids.extend(q.enqueue_many([job(v) for _, v in batch], wait_ms=args.wait_ms))

        def committed() -> str:
            return f"{len(ids)} jobs of queue {args.queue!r}, ids {ids[0]}..{ids[-1]}"

        write_lines(lines, batch_size=args.batch_size or defaults.CLI_BATCH_SIZE,
                    as_json=args.json, command="queue add", verb="enqueued",
                    write_batch=write, committed=committed)
    emit_object(
        {"queue": args.queue, "enqueued": len(ids), "first_id": ids[0] if ids else None},
        as_json=args.json,
    )
    return 0


def _settings(config: QueueConfig) -> dict[str, Any]:
    return {"queue": config.name} | {
        k: v for k, v in config._asdict().items() if k not in _INTERNAL
    }


def _controls(store: Store, queue: str) -> dict[str, Any]:
    """What holds claims back now, and the rate limit's bucket (live, not as last written)."""
    admission = store.queue(queue).admission()
    tokens = admission.rate_tokens
    return {
        "held_by": admission.held_by,
        "rate_tokens": None if tokens is None else round(tokens, 3),
    }


def _settings_and_stats(store: Store, name: str | None = None) -> list[dict[str, Any]]:
    with store.snapshot():
        stats = {s.queue: s._asdict() for s in store.queue_stats()}
        return [
            _settings(config) | stats[config.name] | _controls(store, config.name)
            for config in store.queues()
            if name is None or config.name == name
        ]


def cmd_queue_list(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store:
        rows = _settings_and_stats(store)
    emit(
        rows,
        as_json=args.json,
        columns=STATS_COLUMNS
        + ["visibility_timeout_ms", "max_attempts", "max_size", "max_leased", "rate_limit_per_s"],
    )
    return 0


def cmd_queue_show(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store:
        require_known_queue(store, args.queue)
        if args.job is not None:
            row = store.queue(args.queue).get(args.job)._asdict()
        else:
            [row] = _settings_and_stats(store, args.queue)
    emit_object(row, as_json=args.json)
    return 0


def cmd_queue_create(args: argparse.Namespace) -> int:
    from spark_queue.errors import QueueConfigError

    settings = given_settings(vars(args), QUEUE_SETTINGS)
    with open_for_write(args.path, "queue create", create=args.create) as store:
        q = store.queue(args.queue)
        if q.exists():
            if not args.if_not_exists:
                raise QueueConfigError(
                    f"queue {args.queue!r} already exists in {args.path!r}; change its "
                    f"settings with `sqliteq queue config {args.path} {args.queue}`, or add "
                    "--if-not-exists to succeed without changes."
                )
            config = q.config()
        else:
            config = q.configure(**settings)
    emit_object(_settings(config), as_json=args.json)
    return 0


def cmd_queue_config(args: argparse.Namespace) -> int:
    settings = given_settings(vars(args), QUEUE_SETTINGS)
    with open_for_write(args.path, "queue config", create=args.create) as store:
        config = store.queue(args.queue).configure(**settings)
    emit_object(_settings(config), as_json=args.json)
    return 0


def cmd_queue_pause(args: argparse.Namespace) -> int:
    with open_store(args.path) as store:
        require_known_queue(store, args.queue)  # a typo must not create one
        q = store.queue(args.queue)
        config = q.pause() if args.paused else q.resume()
    emit_object({"queue": config.name, "paused": config.paused}, as_json=args.json)
    return 0


def cmd_queue_stats(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store, store.snapshot():
        one = args.queue is not None
        if one:
            require_known_queue(store, args.queue)
        stats = [store.queue(args.queue).stats()] if one else store.queue_stats()
        paused = {config.name: config.paused for config in store.queues()}
        rows = [
            s._asdict() | {"paused": paused[s.queue]} | _controls(store, s.queue) for s in stats
        ]
    emit(rows, as_json=args.json, columns=STATS_COLUMNS)
    return 0


def cmd_queue_workers(args: argparse.Namespace) -> int:
    import dataclasses  # here: its import (inspect, dis) is most of a bare --help's

    with open_store(args.path, readonly=True) as store, store.snapshot():
        if args.queue is not None:
            store.queue(args.queue).config()  # UnknownQueueError names the queue
        names = [args.queue] if args.queue is not None else [c.name for c in store.queues()]
        rows = [dataclasses.asdict(w) for name in names for w in store.queue(name).workers()]
    emit(rows, as_json=args.json, columns=WORKER_COLUMNS)
    return 0


def cmd_queue_peek(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store:
        require_known_queue(store, args.queue)
        rows = [j._asdict() for j in store.queue(args.queue).peek(args.limit)]
    if not args.json:
        # One line per job: the error's line that names the exception; the whole text is in
        # --json and `sqliteq queue show PATH QUEUE JOB`.
        rows = [row | {"last_error": one_line_error(row["last_error"])} for row in rows]
    emit(rows, as_json=args.json, columns=JOB_LIST_COLUMNS)
    return 0


def cmd_queue_purge(args: argparse.Namespace) -> int:
    if args.expired and args.include_leased:
        raise OptionError("--expired sweeps only expired jobs; it cannot go with --include-leased.")
    with open_store(args.path) as store:
        require_known_queue(store, args.queue)
        q = store.queue(args.queue)
        deleted = q.sweep_expired() if args.expired else q.purge(include_leased=args.include_leased)
    emit_object({"queue": args.queue, "deleted": deleted}, as_json=args.json)
    return 0


def cmd_dlq_list(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store:
        require_known_queue(store, args.queue)
        rows = [j._asdict() for j in store.queue(args.queue).dead_letters(args.limit)]
    if not args.json:
        # A traceback does not fit a table cell: its last line says what went wrong; the
        # whole text is in --json, `sqliteq queue show PATH QUEUE JOB` and `sqliteq job get`.
        rows = [row | {"last_error": one_line_error(row["last_error"])} for row in rows]
    emit(rows, as_json=args.json, columns=["id", "attempts", "dead_ms", "payload", "last_error"])
    return 0


def cmd_dlq_requeue(args: argparse.Namespace) -> int:
    with open_store(args.path) as store:
        require_known_queue(store, args.queue)
        ids = store.queue(args.queue).requeue_dead(args.ids or None)
    emit_object({"queue": args.queue, "requeued": len(ids), "ids": ids}, as_json=args.json)
    return 0


def cmd_dlq_purge(args: argparse.Namespace) -> int:
    with open_store(args.path) as store:
        require_known_queue(store, args.queue)
        deleted = store.queue(args.queue).purge_dead(args.ids or None)
    emit_object({"queue": args.queue, "deleted": deleted}, as_json=args.json)
    return 0


def cmd_job_get(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store:
        require_known_queue(store, args.queue)
        info = store.queue(args.queue).get(args.id)
    emit_object(info._asdict(), as_json=args.json)
    return 0


def cmd_job_remove(args: argparse.Namespace) -> int:
    with open_store(args.path) as store:
        require_known_queue(store, args.queue)
        state = store.queue(args.queue).remove(args.id)
    emit_object({"queue": args.queue, "id": args.id, "removed_from": state}, as_json=args.json)
    return 0
