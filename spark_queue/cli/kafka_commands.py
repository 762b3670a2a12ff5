"""``sqliteq kafka ...``: export topics to Kafka, move positions, import a Kafka topic.

A thin layer over :mod:`spark_queue.kafka`; the Kafka client (confluent-kafka, the
``kafka`` extra) is loaded only when a command talks to a broker, and a missing one is
one line naming the extra (``KafkaClientMissingError``).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from spark_queue.cli import numbers
from spark_queue.cli.output import emit, emit_object
from spark_queue.cli.progress import ExportProgress, watching
from spark_queue.defaults import KAFKA_TIMEOUT_MAX_MS, KAFKA_TIMEOUT_MS
from spark_queue.errors import OptionError

if TYPE_CHECKING:
    from collections.abc import Callable

    from spark_queue.kafka.client_config import KafkaSettings
    from spark_queue.kafka.mirror import MirrorStatus

timeout_ms = numbers.duration(1, KAFKA_TIMEOUT_MAX_MS)


def _broker_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap", required=True, metavar="HOST:PORT[,...]",
                   help="Kafka's bootstrap servers")
    p.add_argument("--timeout", type=timeout_ms, default=KAFKA_TIMEOUT_MS, metavar="DURATION",
                   help="how long to wait for the broker before failing "
                   f"(default {KAFKA_TIMEOUT_MS // 1000}s)")
    p.add_argument("--kafka-config", action="append", default=[], metavar="KEY=VALUE",
                   help="a librdkafka setting for every client (security.protocol=SSL, "
                   "sasl.mechanism=...; repeatable); never a secret: those go in "
                   "--kafka-config-file or SQLITEQ_KAFKA_CONFIG_* variables")
    p.add_argument("--kafka-config-file", metavar="PATH",
                   help="a properties file of client settings (as Kafka's --command-config; "
                   "a Java client's PLAIN or SCRAM sasl.jaas.config is read too); refused if it "
                   "holds a secret and every user may read it")


def _prefix_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prefix", default="", metavar="TEXT",
                   help="Kafka topic = TEXT + store topic (default: the same name)")


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    kafka = sub.add_parser("kafka", help="copy topics and positions to Kafka, or a Kafka topic "
                           "into a store (needs the kafka extra)")
    kafka_sub = kafka.add_subparsers(dest="kafka_command", required=True, metavar="COMMAND")

    p = kafka_sub.add_parser(
        "export", help="copy topics into one-partition Kafka topics, offset for offset",
        description="Copy each topic into a Kafka topic of one partition whose offset N is the "
        "store's offset N (minus the topic's fixed shift if retention removed its head "
        "before the first export). Resumable: a rerun continues where Kafka ends; a Kafka "
        "topic holding other records is refused. The end is verified and summarised.",
    )
    p.add_argument("path", help="the store file")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC",
                   help="a topic to export (repeatable; default: every topic)")
    _prefix_flag(p)
    p.add_argument("-f", "--follow", action="store_true",
                   help="after the copy, mirror new events until interrupted (Ctrl-C, SIGTERM)")
    p.add_argument("--poll-ms", type=numbers.positive_wait_ms, default=500, metavar="DURATION",
                   help="with --follow, how often to look for new events (default 500ms)")
    p.add_argument("--give-up-after", type=timeout_ms, metavar="DURATION",
                   help="with --follow, end when Kafka stays unavailable this long (default: "
                   "wait out any outage)")
    p.add_argument("--replication-factor", type=numbers.integer(1, 32767), metavar="N",
                   help="replicas of the topics the export creates (default: the broker's "
                   "default.replication.factor)")
    p.add_argument("--topic-config", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the topics the export creates (repeatable; default: "
                   "retention.ms=-1, CreateTime)")
    p.add_argument("--force", action="store_true",
                   help="export into a topic whose cleanup.policy, timestamp type or "
                   "retention.ms would not keep the copy (warned, not refused)")
    _broker_flags(p)
    p.add_argument("--json", action="store_true", help="print JSON for scripts (with "
                   "--follow, each state change is a JSON line on stderr)")
    p.set_defaults(func=cmd_export)

    p = kafka_sub.add_parser(
        "commit-offsets", help="commit a consumer's saved offsets for a Kafka consumer group",
        description="Commit CONSUMER's saved offsets, shifted as each topic was exported, for "
        "a Kafka consumer group (default: CONSUMER), so Kafka consumers in that group start "
        "where CONSUMER stopped. Export first; the group must have no running consumers.",
    )
    p.add_argument("path", help="the store file")
    p.add_argument("consumer", help="the store consumer whose saved offsets move")
    p.add_argument("--group", help="the Kafka consumer group (default: the consumer's name)")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC",
                   help="only this topic (repeatable; default: every topic it has)")
    _prefix_flag(p)
    _broker_flags(p)
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=cmd_commit_offsets)

    p = kafka_sub.add_parser(
        "starting-offsets",
        help="print the startingOffsets JSON that resumes a sqliteq query on Kafka",
        description="Print the startingOffsets JSON for format('kafka') that continues a "
        "streaming query from its sqliteq checkpoint (the end of its last committed batch), "
        "in the exported Kafka topics. Give the Kafka query a NEW checkpointLocation.",
    )
    p.add_argument("path", help="the store file the query read (its export shifts)")
    p.add_argument("checkpoint", help="the query's checkpointLocation directory")
    _prefix_flag(p)
    p.add_argument("--source-index", type=numbers.count, metavar="N",
                   help="the query's Nth source (from 0), when it reads several")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=cmd_starting_offsets)

    p = kafka_sub.add_parser(
        "import", help="copy a Kafka topic (all partitions, or a time range) into a store",
        description="Copy every partition of KAFKA_TOPIC into the store (created if missing): "
        "one partition becomes topic KAFKA_TOPIC, several become KAFKA_TOPIC.0, "
        "KAFKA_TOPIC.1, ... Keys, headers and timestamps are kept.",
    )
    p.add_argument("path", help="the store file")
    p.add_argument("kafka_topic", help="the Kafka topic")
    p.add_argument("--into", metavar="TOPIC", help="the store topic's name (default: the Kafka "
                   "topic's; with several partitions, TOPIC.<partition>)")
    p.add_argument("--since", type=numbers.point_in_time, metavar="TIME|DURATION",
                   help="only records at or after this time (ISO-8601, epoch ms, or 10m back)")
    p.add_argument("--until", type=numbers.point_in_time, metavar="TIME|DURATION",
                   help="only records before this time")
    p.add_argument("--value-format", choices=("auto", "json", "text", "bytes"), default="auto",
                   help="how values are stored: auto (standard JSON as JSON, other UTF-8 as "
                   "text, the rest as bytes), json, text or bytes")
    p.add_argument("--first-offset", type=numbers.count, metavar="N",
                   help="the store offset of the first record (default: its Kafka offset, so "
                   "positions mean the same; an export's shift gives that store's offsets)")
    _broker_flags(p)
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=cmd_import)


def settings_from_flags(bootstrap: str, wait_ms: int, pairs: list[str],
                        config_file: str | None) -> KafkaSettings:
    """The broker flags as settings: the config file's, then SQLITEQ_KAFKA_CONFIG_*, then
    --kafka-config (:mod:`spark_queue.kafka.client_config`)."""
    from spark_queue.kafka.client_config import KafkaSettings, client_settings

    return KafkaSettings(bootstrap, wait_ms / 1000, client_settings(pairs, config_file))


def _status_printer(as_json: bool) -> Callable[[MirrorStatus], None]:
    """``--follow``'s state changes on stderr: a line for a person, or a JSON object."""
    import dataclasses
    import json

    def show(status: MirrorStatus) -> None:
        if as_json:
            line = json.dumps(dataclasses.asdict(status))
        else:
            behind = ", ".join(f"{t.topic} {t.lag:,} behind" for t in status.topics if t.lag)
            line = f"sqliteq kafka export: {status.message}" + (f" ({behind})" if behind else "")
        print(line, file=sys.stderr, flush=True)

    return show


def cmd_export(args: argparse.Namespace) -> int:
    import signal
    import threading

    from spark_queue.kafka.client_config import from_pairs
    from spark_queue.kafka.export import TopicOptions, export_topics

    if args.give_up_after is not None and not args.follow:
        raise OptionError("--give-up-after applies to --follow only (an export without it "
                          "fails once --timeout passes); add --follow or leave it out.")
    settings = settings_from_flags(args.bootstrap, args.timeout, args.kafka_config,
                                   args.kafka_config_file)
    stream = watching(args.json)
    stop = threading.Event()
    if args.follow:
        # The handler only sets the flag; the loop flushes, verifies and summarises.
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    options = TopicOptions(args.replication_factor,
                           from_pairs(args.topic_config, "--topic-config"), args.force)
    results = export_topics(
        args.path, settings, args.topic or None, prefix=args.prefix, follow=args.follow,
        poll_ms=args.poll_ms, stop=stop,
        progress=ExportProgress(stream) if stream is not None else None,
        topic_options=options,
        give_up_after_s=None if args.give_up_after is None else args.give_up_after / 1000,
        on_status=_status_printer(args.json),
    )
    rows = [{
        "topic": r.topic, "kafka_topic": r.kafka_topic, "shift": r.shift, "written": r.written,
        "kafka_first": r.kafka_start, "kafka_end": r.kafka_end,
        "records": r.kafka_end - r.kafka_start, "sampled": r.sampled,
        "checksum": r.checksum[:16],
    } for r in results]
    emit(rows, as_json=args.json, columns=["topic", "kafka_topic", "shift", "written",
                                           "kafka_first", "kafka_end", "records", "sampled",
                                           "checksum"])
    return 0


def cmd_commit_offsets(args: argparse.Namespace) -> int:
    from spark_queue.kafka.positions import commit_consumer_offsets

    settings = settings_from_flags(args.bootstrap, args.timeout, args.kafka_config,
                                   args.kafka_config_file)
    done = commit_consumer_offsets(args.path, settings, args.consumer, group=args.group,
                                   topics=args.topic or None, prefix=args.prefix)
    emit([{"group": args.group or args.consumer, "kafka_topic": g.kafka_topic,
           "store_offset": g.store_offset, "kafka_offset": g.kafka_offset} for g in done],
         as_json=args.json, columns=["group", "kafka_topic", "store_offset", "kafka_offset"])
    return 0


def cmd_starting_offsets(args: argparse.Namespace) -> int:
    from spark_queue.kafka.checkpoints import kafka_starting_offsets

    start = kafka_starting_offsets(args.checkpoint, args.path, prefix=args.prefix,
                                   source_index=args.source_index)
    if start.uncommitted_batch is not None:
        print(f"sqliteq kafka starting-offsets: batch {start.uncommitted_batch} was planned but "
              f"not committed; these offsets resume after batch {start.batch_id}, so the Kafka "
              "query reads that batch's events again", file=sys.stderr)
    if args.json:
        emit_object({"startingOffsets": start.starting_offsets, "batch_id": start.batch_id,
                     "store_offsets": start.store_offsets,
                     "uncommitted_batch": start.uncommitted_batch}, as_json=True)
    else:
        print(start.starting_offsets)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from spark_queue.kafka.importing import import_topic

    settings = settings_from_flags(args.bootstrap, args.timeout, args.kafka_config,
                                   args.kafka_config_file)
    done = import_topic(args.path, settings, args.kafka_topic, into=args.into,
                        since_ms=args.since, until_ms=args.until, value_format=args.value_format,
                        first_offset=args.first_offset)
    emit([{"kafka_topic": r.kafka_topic, "partition": r.partition, "topic": r.topic,
           "kafka_first": r.kafka_start, "kafka_end": r.kafka_end, "imported": r.imported,
           "store_first": r.store_start, "gaps": r.gaps} for r in done],
         as_json=args.json, columns=["kafka_topic", "partition", "topic", "kafka_first",
                                     "kafka_end", "imported", "store_first", "gaps"])
    return 0
