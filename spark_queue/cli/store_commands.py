"""Store commands: init, topics, publish, consumers, prune, housekeeping, backup, check.

Like every command module, this one imports the store (and with it pyarrow) only when a
command runs: ``sqliteq --help`` and usage errors answer without it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from spark_queue import defaults
from spark_queue.cli import numbers
from spark_queue.cli.inputs import (
    VALUE_FORMAT_HELP,
    VALUE_FORMATS,
    Lines,
    choose_input,
    parse_value,
    write_lines,
)
from spark_queue.cli.name_hints import require_known_topic
from spark_queue.cli.output import emit, emit_object
from spark_queue.cli.progress import BackupProgressPrinter, watching
from spark_queue.cli.store_access import (
    common,
    create_flag,
    open_for_write,
    open_store,
    say_replication_state,
)
from spark_queue.errors import OptionError

if TYPE_CHECKING:
    from spark_queue.store import Housekeeping, Store, Topic


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("init", help="create a store file (or migrate an existing one)")
    common(p)
    p.add_argument(
        "--durability", choices=defaults.DURABILITY_LEVELS, default=defaults.DURABILITY,
        help="SQLite's synchronous setting for commits: normal survives a process crash, "
        "full also a power loss (default normal)",
    )
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("topics", help="list topics with offsets and counts")
    common(p)
    p.set_defaults(func=cmd_topics)

    p = sub.add_parser(
        "publish",
        help="publish a value, or one event per line of stdin or a file",
        description="Publish VALUE, or without VALUE each line of stdin (of FILE with "
        "--ndjson) as one event, in transactions of --batch-size lines.",
    )
    common(p)
    p.add_argument("topic", help="the topic (it must exist unless --create)")
    p.add_argument(
        "value", nargs="?",
        help="the value to publish; without it (or with -), each line of stdin is one event",
    )
    p.add_argument("--value-format", choices=VALUE_FORMATS, help=VALUE_FORMAT_HELP)
    create_flag(p, "topic")
    p.add_argument("--key", help="the event key (with lines: the key of every line)")
    p.add_argument(
        "--key-separator", metavar="SEP",
        help="lines are KEY<SEP>VALUE: each line's key before the first SEP (kcat -K)",
    )
    p.add_argument(
        "--header", action="append", default=[], metavar="NAME=VALUE",
        help="a header (repeatable; with lines: on every event)",
    )
    p.add_argument(
        "--ndjson", metavar="FILE",
        help="publish each line of FILE ('-' for stdin) as one JSON value",
    )
    p.add_argument(
        "--batch-size", type=numbers.positive, metavar="N",
        help=f"lines per transaction (default {defaults.CLI_BATCH_SIZE}); lines only",
    )
    p.set_defaults(func=cmd_publish)

    p = sub.add_parser("consumers", help="list consumers with their saved offsets and lag")
    common(p)
    p.add_argument("--topic", help="only this topic")
    p.set_defaults(func=cmd_consumers)

    p = sub.add_parser("prune", help="apply retention: delete old events")
    common(p)
    p.add_argument("--topic", help="only this topic (default: every topic)")
    p.add_argument(
        "--retention", "--max-age", "--max-age-ms", dest="retention_ms", metavar="DURATION",
        type=numbers.duration_ms,
        help="delete events older than this: 7d, 1h, 30m, 500ms (a bare number is ms)",
    )
    p.add_argument(
        "--retention-rows", "--max-rows", dest="retention_rows", metavar="N", type=numbers.count,
        help="keep at most this many newest events"
    )
    p.add_argument(
        "--force", action="store_true",
        help="also delete events that consumers have not read yet",
    )
    p.set_defaults(func=cmd_prune)

    p = sub.add_parser(
        "housekeeping",
        help="show or set how the store applies retention by itself; --run: apply it now",
    )
    common(p)
    when = p.add_mutually_exclusive_group()
    when.add_argument(
        "--interval", dest="interval_ms", metavar="DURATION", type=numbers.positive_duration_ms,
        help="run housekeeping this often while a long-running process has the store open "
        "(default 30s)",
    )
    when.add_argument("--off", action="store_true",
                      help="never run it by itself (then schedule `sqliteq housekeeping --run`)")
    p.add_argument(
        "--run", action="store_true",
        help="run it now (retention of every topic, dead letters, expired jobs, the WAL), "
        "unless another process is running it",
    )
    p.set_defaults(func=cmd_housekeeping)

    p = sub.add_parser(
        "backup",
        help="copy the store to a new file while it is in use (progress on a terminal)",
    )
    common(p)
    p.add_argument("dest", help="the new file (must not exist)")
    p.set_defaults(func=cmd_backup)

    p = sub.add_parser("check", help="integrity check; exit code 1 when a problem is found")
    common(p)
    p.set_defaults(func=cmd_check)


def cmd_init(args: argparse.Namespace) -> int:
    with open_for_write(args.path, "init", create=True, durability=args.durability) as store:
        emit_object({"path": store.path, "topics": len(store.topics())}, as_json=args.json)
    return 0


def cmd_topics(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store, store.snapshot():
        rows = [info._asdict() for info in store.topics()]
        for row in rows:
            schema = store.topic(row["name"]).schema()
            row["schema_version"] = None if schema is None else schema.version
    say_replication_state(args.path, "topics")
    emit(rows, as_json=args.json, columns=["name", "earliest", "latest", "count",
                                           "retention_ms", "retention_rows", "max_payload_bytes",
                                           "schema_version"])
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    lines = choose_input("publish", value=args.value, ndjson=args.ndjson,
                         value_format=args.value_format, key_separator=args.key_separator,
                         batch_size=args.batch_size)
    if args.key is not None and args.key_separator is not None:
        raise OptionError("give --key (one key for every line) or --key-separator (a key "
                          "per line), not both.")
    headers = _headers(args.header)
    with open_for_write(args.path, "publish", create=args.create) as store:
        if not args.create:
            require_known_topic(store, args.topic, create_hint=(
                f"make it with `sqliteq topic create {args.path} {args.topic}` or add "
                "--create"))
        else:  # asked: created even where the store creates topics only when asked
            store.topic(args.topic).create()
        if lines is not None:
            summary = _publish_lines(store, args.topic, lines, key=args.key, headers=headers,
                                     batch_size=args.batch_size or defaults.CLI_BATCH_SIZE,
                                     as_json=args.json)
            emit_object(summary, as_json=args.json)
            return 0
        value = parse_value(args.value, args.value_format or "auto")
        offset = store.publish(args.topic, value, key=args.key, headers=headers)
    if not isinstance(offset, int):  # Quarantined: the topic's schema kept the event out
        emit_object({"topic": args.topic, "quarantined": True,
                     "quarantine_id": offset.quarantine_id, "reason": offset.reason},
                    as_json=args.json)
        return 0
    emit_object({"topic": args.topic, "offset": offset}, as_json=args.json)
    return 0


def _publish_lines(
    store: Store, topic: str, lines: Lines, *, key: str | None,
    headers: dict[str, str] | None, batch_size: int, as_json: bool,
) -> dict[str, Any]:
    from spark_queue.store import Record

    offsets: list[int] = []  # first and last offset published

    def write(batch: list[tuple[str | None, Any]]) -> None:
        records = [Record(value, key if line_key is None else line_key, headers)
                   for line_key, value in batch]
        published = store.publish_many(topic, records)
        offsets[:] = [offsets[0] if offsets else published.start, published.stop - 1]

    def committed() -> str:
        first, last = offsets
        return f"offsets {first}..{last} of topic {topic!r}, {last - first + 1} events"

    write_lines(lines, batch_size=batch_size, as_json=as_json, command="publish",
                verb="published", write_batch=write, committed=committed)
    count = offsets[1] - offsets[0] + 1 if offsets else 0
    return {"topic": topic, "published": count, "first_offset": offsets[0] if offsets else None}


def cmd_consumers(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store:
        if args.topic is not None:
            require_known_topic(store, args.topic)
        rows = [info._asdict() for info in store.consumers(args.topic)]
        now = store.file.now_ms()
        # A name several queries read under: its offset is their lowest holding one; each
        # query's own position follows, named by the id its checkpoint carries, with the
        # time since its query saved it (a stopped one holds nothing: docs/reading.md).
        positions = [{"consumer": p.consumer, "topic": p.topic, "next_offset": p.next_offset,
                      "latest": p.latest, "lag": p.lag, "updated_ms": p.updated_ms,
                      "query": p.reader, "confirmed": p.confirmed,
                      "saved_age_ms": max(0, now - p.updated_ms), "holds": p.holds}
                     for p in store.consumer_positions(args.topic)]
    columns = ["consumer", "topic", "next_offset", "latest", "lag", "updated_ms"]
    if positions:
        rows = sorted(rows + positions, key=lambda r: (r["consumer"], r["topic"],
                                                       r.get("query") or ""))
        columns += ["query", "saved_age_ms", "holds"]
    emit(rows, as_json=args.json, columns=columns, durations=frozenset({"saved_age_ms"}))
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    with open_store(args.path) as store:
        pruned: Topic | Housekeeping = store.housekeeping  # no topic named: every topic
        if args.topic is not None:
            require_known_topic(store, args.topic)
            pruned = store.topic(args.topic)
        results = pruned.prune(retention_ms=args.retention_ms,
                               retention_rows=args.retention_rows, force=args.force)
    emit([r._asdict() for r in results], as_json=args.json,
         columns=["topic", "deleted", "earliest_before", "earliest_after", "held_by"])
    return 0


def cmd_housekeeping(args: argparse.Namespace) -> int:
    changes = args.run or args.off or args.interval_ms is not None
    # Showing the status opens the store read-only: looking at a store an older release
    # wrote must not migrate it under that release's processes (as topics and check).
    with open_store(args.path, readonly=not changes) as store:
        if args.off or args.interval_ms is not None:
            store.housekeeping.set_interval(0 if args.off else args.interval_ms)
        ran = store.housekeeping.run() if args.run else None
        status = store.housekeeping.status()
    last = status.last_run
    held_back = [] if last is None else [h._asdict() for h in last.held_back]
    shown: dict[str, Any] = {
        "interval_ms": status.interval_ms,
        "ran_now": None if not args.run else ran is not None,
        "lease_holder": status.lease_holder,
        "last_run_ms": None if last is None else last.started_ms,
        "last_run_took_ms": None if last is None else last.ended_ms - last.started_ms,
        "last_run_holder": None if last is None else last.holder,
        "deleted_events": None if last is None else last.deleted_events,
        "deleted_dead_letters": None if last is None else last.deleted_dead_letters,
        "expired_jobs": None if last is None else last.expired_jobs,
        "held_back": None if last is None else held_back,
        "problems": None if last is None else list(last.problems),
    }
    if not args.run:
        del shown["ran_now"]
    if args.json:
        emit_object(shown, as_json=True)
        return 0
    # For people: the record as every other table (`30s`, `..._utc`), then the consumers
    # that held retention back as a table of their own rather than a JSON list.
    del shown["held_back"]
    emit_object(shown, as_json=False, durations=_HOUSEKEEPING_DURATIONS,
                times=_HOUSEKEEPING_TIMES)
    if held_back:
        print()
        print("held back by consumers:")
        emit(held_back, as_json=False,
             columns=["topic", "consumer", "events", "held_ms", "query", "query_saved_ms"],
             durations=_HOUSEKEEPING_DURATIONS)
    return 0


# The housekeeping record's spans and points in time, as tables show them (cli/output.py).
_HOUSEKEEPING_DURATIONS = frozenset({"interval_ms", "last_run_took_ms", "held_ms",
                                     "query_saved_ms"})
_HOUSEKEEPING_TIMES = frozenset({"last_run_ms"})


def cmd_backup(args: argparse.Namespace) -> int:
    from spark_queue.store import BackupSource

    stream = watching(args.json)
    # Read-only and unmigrated: a backup never writes its source, and the copy keeps the
    # schema version of the release that wrote it (a rollback point before an upgrade).
    with BackupSource(args.path) as source:
        progress = None if stream is None else BackupProgressPrinter(stream, source.page_size())
        pages = source.backup(args.dest, progress)
    if progress is not None:
        progress.finish()
    emit_object({"source": args.path, "backup": args.dest, "pages": pages}, as_json=args.json)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from spark_queue.store import check_file

    report = check_file(args.path)
    emit_object({"ok": report.ok, "problems": report.problems,
                 "warnings": list(report.warnings)}, as_json=args.json)
    return 0 if report.ok else 1


def _headers(pairs: list[str]) -> dict[str, str] | None:
    headers: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise OptionError(f"--header must look like NAME=VALUE; got {pair!r}.")
        if name in headers:
            # The store keeps one value per header name (as the sink refuses such rows).
            raise OptionError(
                f"--header {name!r} is given twice ({name}={headers[name]} and {pair}); an "
                "event holds one value per header name: give each name once."
            )
        headers[name] = value
    return headers or None
