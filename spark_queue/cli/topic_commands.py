"""Stream management: ``topic list|show|create|config|delete`` and
``consumer list|reset|delete``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from spark_queue.cli import numbers, schema_commands
from spark_queue.cli.name_hints import require_known_topic
from spark_queue.cli.output import emit, emit_object
from spark_queue.cli.setting_flags import add_setting_flags, given_settings
from spark_queue.cli.store_access import common, create_flag, open_for_write, open_store
from spark_queue.cli.store_commands import cmd_consumers, cmd_topics
from spark_queue.errors import OffsetRangeError, OptionError, UnknownConsumerError
from spark_queue.setting_table import TOPIC_SETTINGS

if TYPE_CHECKING:
    from spark_queue.store import Store

CONSUMER_COLUMNS = ["consumer", "topic", "before", "next_offset", "earliest", "latest", "lag"]

DELETE_HELP = (
    "delete a topic with its events and its consumers' saved offsets (needs --yes). Stop "
    "Spark queries that read it and restart them from a new checkpoint: a checkpoint holds "
    "the old offsets, and a publish recreates the topic from offset 0 (a query left running "
    "fails once the new topic is behind its checkpoint). The sink ledger is kept (it is keyed "
    "by sink id): a query that writes here again under the same sinkId skips the batch ids it "
    "committed before"
)
RESET_HELP = (
    "move a consumer's saved offset (earlier or later). A running Spark query keeps reading "
    "from its checkpoint and saves its own offset on the next batch: reset while it is "
    "stopped, then start it with startingOffsets=committed"
)


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    topic = sub.add_parser(
        "topic", help="list, show, create, configure or delete topics; set their schema")
    topic_sub = topic.add_subparsers(dest="topic_command", required=True, metavar="COMMAND")

    p = topic_sub.add_parser("list", help="list topics with offsets and counts (= topics)")
    common(p)
    p.set_defaults(func=cmd_topics)

    p = topic_sub.add_parser(
        "show", help="one topic's offsets, count, settings and consumers (also: describe)"
    )
    common(p)
    p.add_argument("topic", help="the topic's name")
    p.set_defaults(func=cmd_topic_show)

    p = topic_sub.add_parser("create", help="create a topic with its retention and payload limit")
    common(p)
    p.add_argument("topic", help="the topic's name")
    add_setting_flags(p, TOPIC_SETTINGS, clearable=False)
    create_flag(p)
    p.add_argument("--if-not-exists", action="store_true",
                   help="succeed without changes when the topic exists")
    p.set_defaults(func=cmd_topic_create)

    p = topic_sub.add_parser(
        "config", help="show a topic's settings, or change its retention or payload limit "
        "(--create: create it too)"
    )
    common(p)
    p.add_argument("topic", help="the topic's name")
    add_setting_flags(p, TOPIC_SETTINGS, clearable=True)
    create_flag(p, "topic")
    p.set_defaults(func=cmd_topic_config)

    p = topic_sub.add_parser("delete", help="delete a topic, its events and saved offsets",
                             description=DELETE_HELP + ".")
    common(p)
    p.add_argument("topic", help="the topic's name")
    p.add_argument("--yes", action="store_true", help="really delete (refused without it)")
    p.set_defaults(func=cmd_topic_delete)
    schema_commands.add_commands(topic_sub)
    schema_commands.add_quarantine_commands(topic_sub)

    consumer = sub.add_parser("consumer", help="list, reset or delete consumers' saved offsets")
    consumer_sub = consumer.add_subparsers(
        dest="consumer_command", required=True, metavar="COMMAND"
    )
    p = consumer_sub.add_parser(
        "list", help="list consumers with their saved offsets and lag (= consumers)"
    )
    common(p)
    p.add_argument("--topic", help="only this topic")
    p.set_defaults(func=cmd_consumers)

    p = consumer_sub.add_parser(
        "show", help="one consumer's saved offset and lag on each topic (also: describe)"
    )
    common(p)
    p.add_argument("consumer", help="the consumer (a tail --group, a Spark consumer option)")
    p.set_defaults(func=cmd_consumer_show)

    p = consumer_sub.add_parser("reset", help="move a consumer's saved offset",
                                description=RESET_HELP + ".")
    common(p)
    p.add_argument("consumer", help="the consumer (a tail --group, a Spark consumer option)")
    p.add_argument("--topic", help="only this topic (default: every topic it has an offset for)")
    p.add_argument("--query", metavar="ID", help="only this query's position under the name "
                   "(an id `sqliteq consumers` shows; default: the name and all its queries)")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the oldest event kept")
    to.add_argument("--to-latest", action="store_true", help="after the newest event")
    to.add_argument("--to-offset", type=numbers.count, metavar="N",
                    help="this offset (from earliest to latest)")
    to.add_argument(
        "--to-time", metavar="TIME|DURATION", type=numbers.point_in_time,
        help="the first event at or after an ISO-8601 time (UTC if no zone), epoch ms, "
        "or a duration back from now (10m, 2h)",
    )
    p.set_defaults(func=cmd_consumer_reset)

    p = consumer_sub.add_parser(
        "delete",
        help="forget a consumer's saved offsets, so retention is no longer held back by it",
    )
    common(p)
    p.add_argument("consumer", help="the consumer (a tail --group, a Spark consumer option)")
    p.add_argument("--topic", help="only this topic (default: every topic)")
    p.add_argument("--query", metavar="ID", help="only this query's position under the name "
                   "(an id `sqliteq consumers` shows; default: the name and all its queries)")
    p.set_defaults(func=cmd_consumer_delete)


def cmd_topic_create(args: argparse.Namespace) -> int:
    settings = given_settings(vars(args), TOPIC_SETTINGS)
    with open_for_write(args.path, "topic create", create=args.create) as store:
        if args.if_not_exists and store.topic(args.topic).exists():
            info = next(t for t in store.topics() if t.name == args.topic)
        else:
            info = store.topic(args.topic).configure(exist_ok=False, **settings)
    emit_object(info._asdict(), as_json=args.json)
    return 0


def cmd_topic_show(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store:
        emit_object(_topic_record(store, args.topic, consumers=True), as_json=args.json)
    return 0


def _topic_record(store: Store, topic: str, *, consumers: bool = False) -> dict[str, Any]:
    """A topic's offsets, count and settings (and its consumers' lag), as `topics` lists it."""
    require_known_topic(store, topic)
    with store.snapshot():
        [info] = [t for t in store.topics() if t.name == topic]
        record = info._asdict()
        if consumers:
            record["consumers"] = {c.consumer: c.lag for c in store.consumers(topic)}
    return record


def cmd_topic_config(args: argparse.Namespace) -> int:
    settings = given_settings(vars(args), TOPIC_SETTINGS)
    if not settings and not args.create:
        # No change asked for: show the settings, as `kafka-configs --describe` does.
        with open_store(args.path, readonly=True) as store:
            emit_object(_topic_record(store, args.topic), as_json=args.json)
        return 0
    with open_for_write(args.path, "topic config", create=args.create) as store:
        if not args.create:
            require_known_topic(store, args.topic, create_hint=(
                f"make it with `sqliteq topic create {args.path} {args.topic}` or add "
                "--create"))
        info = store.topic(args.topic).configure(exist_ok=True, **settings)
    emit_object(info._asdict(), as_json=args.json)
    return 0


def cmd_topic_delete(args: argparse.Namespace) -> int:
    with open_store(args.path) as store:
        require_known_topic(store, args.topic)
        if not args.yes:
            earliest, latest = store.topic(args.topic).bounds()  # UnknownTopicError names it
            held = [c.consumer for c in store.consumers(args.topic)]
            raise OptionError(
                f"topic delete removes topic {args.topic!r} with its {latest - earliest} "
                f"event(s) and the saved offsets of {len(held)} consumer(s)"
                f"{' (' + ', '.join(held) + ')' if held else ''}; nothing was deleted. "
                "Run again with --yes to delete it."
            )
        deleted = store.topic(args.topic).delete()
    emit_object({"topic": deleted.topic, "deleted_events": deleted.events,
                 "deleted_consumers": deleted.consumers}, as_json=args.json)
    return 0


def _target(store: Store, topic: str, *, to_earliest: bool, to_latest: bool,
            to_time: int | None, to_offset: int) -> int:
    earliest, latest = store.topic(topic).bounds()
    if to_earliest:
        return earliest
    if to_latest:
        return latest
    if to_time is not None:
        return store.topic(topic).offset_for_timestamp(to_time)
    if not earliest <= to_offset <= latest:
        raise OffsetRangeError(
            f"--to-offset {to_offset} is outside topic {topic!r}: it holds offsets "
            f"{earliest} to {latest} (latest is the next offset to be published); "
            f"give an offset from {earliest} to {latest}."
        )
    return to_offset


def cmd_consumer_reset(args: argparse.Namespace) -> int:
    with open_store(args.path) as store:
        before = store.committed_offsets(args.consumer)
        if args.topic is not None:
            require_known_topic(store, args.topic)
        topics = [args.topic] if args.topic is not None else list(before)
        if not topics:
            raise UnknownConsumerError(
                f"consumer {args.consumer!r} has no saved offsets; name the topic to "
                "reset it on with --topic T."
            )
        store.reset_offsets(args.consumer, topics, lambda topic: _target(
            store, topic, to_earliest=args.to_earliest, to_latest=args.to_latest,
            to_time=args.to_time, to_offset=args.to_offset), reader=args.query)
        rows = _consumer_rows(store, args.consumer, before, topics)
    emit(rows, as_json=args.json, columns=CONSUMER_COLUMNS)
    return 0


def _consumer_rows(
    store: Store, consumer: str, before: dict[str, int], topics: list[str]
) -> list[dict[str, Any]]:
    rows = []
    for info in store.consumers():
        if info.consumer == consumer and info.topic in topics:
            earliest = store.topic(info.topic).bounds()[0]
            rows.append({"consumer": consumer, "topic": info.topic,
                         "before": before.get(info.topic), "next_offset": info.next_offset,
                         "earliest": earliest, "latest": info.latest, "lag": info.lag})
    return rows


def cmd_consumer_show(args: argparse.Namespace) -> int:
    with open_store(args.path, readonly=True) as store:
        rows = [info._asdict() for info in store.consumers() if info.consumer == args.consumer]
    if not rows:
        raise UnknownConsumerError(
            f"consumer {args.consumer!r} has no saved offsets; list consumers with "
            f"`sqliteq consumer list {args.path}`."
        )
    emit(rows, as_json=args.json,
         columns=["consumer", "topic", "next_offset", "latest", "lag", "updated_ms"])
    return 0


def cmd_consumer_delete(args: argparse.Namespace) -> int:
    with open_store(args.path) as store:
        deleted = store.delete_consumer(args.consumer, args.topic, reader=args.query)
    if not deleted:
        where = "" if args.topic is None else f" for topic {args.topic!r}"
        where += "" if args.query is None else f" under query {args.query!r}"
        raise UnknownConsumerError(
            f"consumer {args.consumer!r} has no saved offsets{where}; list consumers with "
            f"`sqliteq consumers {args.path}`."
        )
    done: dict[str, Any] = {"consumer": args.consumer, "topic": args.topic}
    if args.query is not None:
        done["query"] = args.query
    emit_object({**done, "deleted_offsets": deleted}, as_json=args.json)
    return 0
