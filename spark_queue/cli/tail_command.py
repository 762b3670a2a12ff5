"""``sqliteq tail``: print a topic's events from an offset, the last N, or a time; follow it.

Plain lines are ``OFFSET<TAB>TIME (UTC)[ key=KEY][ headers={...}]<TAB>VALUE``, one
event per line (text holding a newline or tab is printed as a JSON string); ``--json``
prints one object per line with the raw ``timestamp_ms`` and ``value_type``; ``--values``
prints each value alone (kcat's ``-f '%s\n'``).
``--group NAME`` reads from consumer NAME's saved offset and saves it as it goes,
as ``kafka-console-consumer --group`` and ``kcat -G`` do.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any, Literal

from spark_queue.cli import numbers
from spark_queue.cli.name_hints import require_known_topic
from spark_queue.cli.output import emit_line, show_time
from spark_queue.cli.store_access import common, open_store, say_replication_state
from spark_queue.errors import OptionError, StoreNotFoundError

if TYPE_CHECKING:
    from spark_queue.store import Event, Store

READ_CHUNK = 1000
_CONTROL = frozenset("\n\r\t")

# Where --from starts: a keyword, or an offset (-N: the last N events).
Start = Literal["earliest", "latest"] | int


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "tail",
        help="print events from an offset, the last N or a time; --follow waits for new ones "
        "(and for a topic or store file not created yet)",
    )
    common(p)
    p.add_argument("topic", help="the topic's name")
    start = p.add_mutually_exclusive_group()
    start.add_argument(
        "--from", dest="start", metavar="POSITION", type=numbers.start_position,
        help="an offset, -N for the last N events, 'earliest' (default) or 'latest'",
    )
    start.add_argument(
        "--from-beginning", dest="start", action="store_const", const="earliest",
        help="the same as --from earliest (kafka-console-consumer's flag)",
    )
    p.add_argument(
        "--since", metavar="DURATION|TIME", type=numbers.point_in_time,
        help="from the first event at or after a time: a duration back from now (10m, 2h) "
        "or an ISO-8601 time (UTC if no zone)",
    )
    p.add_argument("--limit", type=numbers.count, metavar="N",
                   help="stop after this many events")
    p.add_argument(
        "--group", metavar="NAME",
        help="read as consumer NAME: start at its saved offset (--from/--since apply only "
        "when it has none) and save the offset after each printed chunk; "
        "`sqliteq consumers` shows its lag",
    )
    p.add_argument("-f", "--follow", action="store_true",
                   help="keep waiting for new events (and for the topic and the store file, "
                   "if they do not exist yet)")
    p.add_argument(
        "--values", action="store_true",
        help="print each event's value alone, one per line (as kcat -f '%%s\\n'): text as "
        "is, JSON as JSON, bytes as base64:...; text holding a newline as a JSON string",
    )
    p.add_argument("--poll-ms", default=200, metavar="DURATION", type=numbers.positive_wait_ms,
                   help="how often --follow looks: 200 (ms, the default), 1s, ...")
    p.set_defaults(func=cmd_tail)


def pause(seconds: float) -> None:
    """Sleep between looks (a seam: tests make the wait deterministic)."""
    time.sleep(seconds)


def cmd_tail(args: argparse.Namespace) -> int:
    if args.start is not None and args.since is not None:
        raise OptionError("give --from or --since, not both.")
    if args.values and args.json:
        raise OptionError("give --values (each value alone) or --json (whole events), not both.")
    poll_s = args.poll_ms / 1000
    start: Start = "earliest" if args.start is None else args.start
    since_ms = args.since
    with _open_when_created(args.path, poll_s, readonly=args.group is None,
                            follow=args.follow) as store:
        if args.follow and not store.topic(args.topic).exists():
            _say_waiting(f"topic {args.topic!r}")
            while not store.topic(args.topic).exists():
                pause(poll_s)
        require_known_topic(store, args.topic)
        say_replication_state(args.path, "tail")
        saved = None if args.group is None else store.committed_offsets(args.group).get(
            args.topic)
        if saved is not None:
            position = max(saved, store.topic(args.topic).bounds()[0])
        else:
            position = _first_offset(store, args.topic, start, since_ms)
            _say_if_past_the_end(store, args.topic, start, position, follow=args.follow)
        remaining = args.limit
        while remaining is None or remaining > 0:
            events = store.read(args.topic, position, limit=min(remaining or READ_CHUNK,
                                                                 READ_CHUNK))
            for event in events:
                _print_event(event, as_json=args.json, values=args.values)
            if events:
                position = events[-1].offset + 1
                if args.group is not None:  # printed, then saved: at least once, as Kafka's
                    store.commit_offsets(args.group, {args.topic: position})
                remaining = None if remaining is None else remaining - len(events)
                continue
            if not args.follow:
                break
            pause(poll_s)
    return 0


def _open_when_created(path: str, poll_s: float, *, readonly: bool, follow: bool) -> Store:
    """The store at PATH; with --follow, once some process has created it (as ``tail -F``)."""
    announced = False
    while True:
        try:
            return open_store(path, readonly=readonly)
        except StoreNotFoundError:  # missing, or empty while its creator writes the schema
            if not follow:
                raise
            if not announced:
                _say_waiting(f"store file {path!r}")
                announced = True
            pause(poll_s)


def _say_waiting(what: str) -> None:
    print(f"sqliteq tail: waiting for {what} to be created (Ctrl-C to stop)",
          file=sys.stderr, flush=True)


def _say_if_past_the_end(
    store: Store, topic: str, start: Start, position: int, *, follow: bool
) -> None:
    """A line on stderr when ``--from N`` starts after the newest event: else nothing is
    printed and nothing says why."""
    latest = store.topic(topic).bounds()[1]
    if isinstance(start, int) and start > latest:
        wait = "waiting for it" if follow else "nothing to print"
        print(f"sqliteq tail: --from {start} is past the end of topic {topic!r}: its next "
              f"offset is {latest} ({wait}); `--from -N` prints the last N events.",
              file=sys.stderr, flush=True)


def _first_offset(store: Store, topic: str, start: Start, since_ms: int | None) -> int:
    earliest, latest = store.topic(topic).bounds()  # UnknownTopicError names the topic
    if since_ms is not None:
        return store.topic(topic).offset_for_timestamp(since_ms)
    if start == "earliest":
        return earliest
    if start == "latest":
        return latest
    if start < 0:  # the last N, as `kcat -o -N`
        return max(earliest, latest + start)
    return max(start, earliest)


def _print_event(event: Event, *, as_json: bool, values: bool = False) -> None:
    if values:
        sys.stdout.write(_one_line(event.value) + "\n")
        sys.stdout.flush()
        return
    if as_json:
        emit_line({"offset": event.offset, "timestamp_ms": event.timestamp_ms,
                   "key": event.key, "value": event.value, "value_type": event.value_type,
                   "headers": event.headers})
        return
    key = "" if event.key is None else f" key={_one_line(event.key)}"
    if event.headers:
        key += " headers=" + json.dumps(event.headers, ensure_ascii=False, separators=(",", ":"))
    sys.stdout.write(
        f"{event.offset}\t{show_time(event.timestamp_ms)}{key}\t{_one_line(event.value)}\n"
    )
    sys.stdout.flush()


def _one_line(value: Any) -> str:
    """Text as is unless it would break the line; bytes as base64; JSON values as JSON."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if _CONTROL & set(value) else value
    if isinstance(value, bytes):
        import base64

        return "base64:" + base64.b64encode(value).decode("ascii")
    return json.dumps(value, ensure_ascii=False)
