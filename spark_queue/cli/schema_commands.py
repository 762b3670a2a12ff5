"""A topic's schema: ``topic schema set|show`` (docs/schemas.md)."""

from __future__ import annotations

import argparse

from spark_queue.cli.name_hints import require_known_topic
from spark_queue.cli.output import emit, emit_object
from spark_queue.cli.store_commands import common, create_flag, open_for_write, open_store

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
    p.add_argument("--on-invalid", choices=["reject"], default="reject",
                   help="what an event that does not fit meets: reject (the default) fails "
                   "its batch whole")
    p.add_argument("--compatibility", choices=["backward", "none"], default="backward",
                   help="the rule against the previous version (default: backward)")
    create_flag(p, "topic")
    p.set_defaults(func=cmd_schema_set)

    p = schema_sub.add_parser("show", help="a topic's schema (--history: every version)")
    common(p)
    p.add_argument("topic", help="the topic's name")
    p.add_argument("--history", action="store_true", help="every version, oldest first")
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
    if args.history:
        emit([v._asdict() for v in versions], as_json=args.json,
             columns=["version", "ddl", "on_invalid", "compatibility", "from_offset"])
    elif versions:
        emit_object(versions[-1]._asdict(), as_json=args.json)
    else:
        emit_object({"topic": args.topic, "version": None, "ddl": None}, as_json=args.json)
    return 0
