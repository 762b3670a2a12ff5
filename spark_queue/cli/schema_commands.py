"""A topic's schema: ``topic schema set|show`` and ``topic quarantine
list|show|replay|purge`` (docs/schemas.md)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from spark_queue.cli.name_hints import require_known_topic
from spark_queue.cli.output import emit, emit_object
from spark_queue.cli.store_access import common, create_flag, open_for_write, open_store
from spark_queue.errors import ArgumentError

if TYPE_CHECKING:
    from spark_queue.store import QuarantinedEvent

SET_HELP = (
    "declare a topic's schema in Spark DDL as its next version: from then on every writer "
    "(Python, the Spark sink, `sqliteq publish`, INSERT INTO sq_publish) refuses an event "
    "that does not fit, naming the field; --compatibility backward (the default) refuses a "
    "change that removes a field, changes its type or adds a NOT NULL one"
)


def add_commands(topic_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    schema = topic_sub.add_parser("schema", help="set or show a topic's schema (Spark DDL)")
    schema_sub = schema.add_subparsers(dest="schema_command", required=True, metavar="COMMAND")

    p = schema_sub.add_parser("set", help="declare a topic's schema (its next version)",
                              description=SET_HELP + ".")
    common(p)
    p.add_argument("topic", help="the topic's name")
    p.add_argument("ddl", metavar="DDL",
                   help="Spark DDL, e.g. 'device STRING NOT NULL, temp DOUBLE'")
    p.add_argument("--on-invalid", choices=["reject", "quarantine"], default="reject",
                   help="what an event that does not fit meets: reject (the default) fails "
                   "its batch whole; quarantine keeps it aside and stores the rest")
    p.add_argument("--compatibility", choices=["backward", "none"], default="backward",
                   help="the rule against the previous version (default: backward)")
    create_flag(p, "topic")
    p.set_defaults(func=cmd_schema_set)

    p = schema_sub.add_parser("show", help="a topic's schema (--history: every version)")
    common(p)
    p.add_argument("topic", help="the topic's name")
    p.add_argument("--history", action="store_true", help="every version, oldest first")
    p.add_argument("--json-schema", action="store_true",
                   help="the newest version as a JSON Schema document (for a Kafka side's "
                   "schema registry)")
    p.set_defaults(func=cmd_schema_show)


def cmd_schema_set(args: argparse.Namespace) -> int:
    with open_for_write(args.path, "topic schema set", create=args.create) as store:
        if not args.create:
            require_known_topic(store, args.topic, create_hint=(
                f"make it with `sqliteq topic create {args.path} {args.topic}` or add "
                "--create"))
        schema = store.topic(args.topic).set_schema(
            args.ddl, on_invalid=args.on_invalid, compatibility=args.compatibility)
    emit_object(schema._asdict(), as_json=args.json)
    return 0


def cmd_schema_show(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store:
        require_known_topic(store, args.topic)
        topic = store.topic(args.topic)
        versions = topic.schema_history()
    if args.json_schema:
        if not versions:
            raise ArgumentError(f"topic {args.topic!r} declares no schema; declare it with "
                                f"`sqliteq topic schema set {args.path} {args.topic} 'DDL'`.")
        print(json.dumps(versions[-1].json_schema(), indent=2))
    elif args.history:
        emit([v._asdict() for v in versions], as_json=args.json,
             columns=["version", "ddl", "on_invalid", "compatibility", "from_offset"])
    elif versions:
        emit_object(versions[-1]._asdict(), as_json=args.json)
    else:
        emit_object({"topic": args.topic, "version": None, "ddl": None}, as_json=args.json)
    return 0


def add_quarantine_commands(topic_sub: argparse._SubParsersAction[argparse.ArgumentParser],
                            ) -> None:
    quarantine = topic_sub.add_parser(
        "quarantine", help="list, show, replay or purge the events a topic's schema kept out")
    q_sub = quarantine.add_subparsers(dest="quarantine_command", required=True,
                                      metavar="COMMAND")
    p = q_sub.add_parser("list", help="the topic's quarantined events, oldest first")
    common(p)
    p.add_argument("topic", help="the topic's name")
    p.set_defaults(func=cmd_quarantine_list)

    p = q_sub.add_parser("show", help="one quarantined event with its value as stored")
    common(p)
    p.add_argument("topic", help="the topic's name")
    p.add_argument("id", type=int, metavar="ID", help="its id (`topic quarantine list`)")
    p.set_defaults(func=cmd_quarantine_show)

    p = q_sub.add_parser("replay", help="publish the quarantined events that fit the schema "
                         "now, and drop them from the quarantine; the others stay")
    common(p)
    p.add_argument("topic", help="the topic's name")
    p.add_argument("--id", type=int, action="append", dest="ids", metavar="ID",
                   help="only this event (repeat for more; default: all)")
    p.set_defaults(func=cmd_quarantine_replay)

    p = q_sub.add_parser("purge", help="delete quarantined events")
    common(p)
    p.add_argument("topic", help="the topic's name")
    p.add_argument("--id", type=int, action="append", dest="ids", metavar="ID",
                   help="only this event (repeat for more; default: all)")
    p.set_defaults(func=cmd_quarantine_purge)


_LIST_COLUMNS = ["id", "schema_version", "next_offset", "writer", "batch_row", "reason"]


def cmd_quarantine_list(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store:
        require_known_topic(store, args.topic)
        rows = [_record(e, value=False) for e in store.topic(args.topic).quarantine()]
    emit(rows, as_json=args.json, columns=_LIST_COLUMNS)
    return 0


def cmd_quarantine_show(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store:
        require_known_topic(store, args.topic)
        found = store.topic(args.topic).quarantine([args.id])
    if not found:
        raise ArgumentError(f"topic {args.topic!r} has no quarantined event {args.id}; "
                            f"`sqliteq topic quarantine list {args.path} {args.topic}` "
                            "lists them.")
    emit_object(_record(found[0], value=True), as_json=args.json)
    return 0


def cmd_quarantine_replay(args: argparse.Namespace) -> int:
    with open_for_write(args.path, "topic quarantine replay", create=False) as store:
        require_known_topic(store, args.topic)
        done = store.topic(args.topic).replay_quarantine(args.ids)
    emit_object({"topic": args.topic, "replayed": len(done.offsets), "offsets": done.offsets,
                 "still_invalid": done.still_invalid}, as_json=args.json)
    return 0


def cmd_quarantine_purge(args: argparse.Namespace) -> int:
    with open_for_write(args.path, "topic quarantine purge", create=False) as store:
        require_known_topic(store, args.topic)
        gone = store.topic(args.topic).purge_quarantine(args.ids)
    emit_object({"topic": args.topic, "purged": gone}, as_json=args.json)
    return 0


def _record(event: QuarantinedEvent, *, value: bool) -> dict[str, Any]:
    record = event._asdict()
    if not value:
        for column in ("key", "value", "headers"):
            record.pop(column)
        return record
    for column in ("key", "value"):
        if isinstance(record[column], bytes):
            record[column] = record[column].decode("utf-8", "backslashreplace")
    return record
