"""``sqliteq replicate`` and ``sqliteq restore``: a store that outlives its machine
(Litestream; :mod:`spark_queue.replication`, docs/replication.md)."""

from __future__ import annotations

import argparse
import sys
from types import FrameType

from spark_queue import defaults
from spark_queue.cli.numbers import duration, point_in_time

_URL_HELP = ("file:///dir or s3://bucket/prefix (endpoint, region and credentials from "
             "AWS_ENDPOINT_URL_S3/AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, "
             "AWS_SECRET_ACCESS_KEY or the AWS config files; never on the command line)")


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replicate",
        help="replicate a store to a replica with Litestream until SIGTERM/Ctrl-C",
        description="Ship STORE's changes to the replica (Litestream) and keep its replicated "
        "high-water mark: readers see only what the replica holds, and durability='replicated' "
        "writes return once it holds them. Runs until SIGTERM or Ctrl-C.",
    )
    p.add_argument("path", help="the store file (created when missing)")
    p.add_argument("--to", dest="url", metavar="URL", help=_URL_HELP)
    p.add_argument(
        "--sync-interval", type=duration(10, 3_600_000), metavar="DURATION",
        default=defaults.REPLICA_SYNC_INTERVAL_MS,
        help="how often the WAL is shipped and the mark moves when no replicated write waits "
        "(default 1s; each ship is object-store requests)",
    )
    p.add_argument("--litestream", metavar="PATH",
                   help="the litestream binary (default: the one the replicate extra installs)")
    p.add_argument("--forget", action="store_true",
                   help="stop treating STORE as replicated (readers see every event again), "
                   "and exit")
    p.set_defaults(func=cmd_replicate)

    p = sub.add_parser(
        "restore",
        help="restore a missing store from its replica (latest, or as of --timestamp)",
        description="Restore STORE from the replica at URL. Never overwrites a store: an "
        "existing STORE is an error, or with --if-missing a no-op.",
    )
    p.add_argument("path", help="the store file to create")
    p.add_argument("--from", dest="url", metavar="URL", required=True, help=_URL_HELP)
    p.add_argument("--if-missing", action="store_true",
                   help="exit 0 doing nothing when STORE exists or the replica is empty")
    p.add_argument("--timestamp", type=point_in_time, metavar="T",
                   help="the state as of T (ISO-8601, epoch ms, or 10m back from now), "
                   "within one sync interval")
    p.add_argument("--litestream", metavar="PATH", help="the litestream binary")
    p.set_defaults(func=cmd_restore)


def cmd_replicate(args: argparse.Namespace) -> int:
    from spark_queue.errors import OptionError
    from spark_queue.store import ReplicaCycles

    if args.forget:
        cycles = ReplicaCycles(args.path)
        try:
            was = cycles.unmark()
        finally:
            cycles.close()
        print(f"{args.path}: {'no longer' if was else 'was not'} replicated", file=sys.stderr)
        return 0
    if not args.url:
        raise OptionError("sqliteq replicate needs --to URL (file:///dir or s3://bucket/prefix).")
    import signal
    import threading

    from spark_queue.replication import Replicator

    replicator = Replicator(args.path, args.url, sync_interval_ms=args.sync_interval,
                            litestream_path=args.litestream)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()  # the loop does the rest: a last cycle, then Litestream stops

    def on_ready() -> None:  # the store is marked: writers opened from now on are safe
        print(f"replicating {args.path} to {replicator.target.url} (Ctrl-C stops)",
              file=sys.stderr, flush=True)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        replicator.run(stop, on_ready)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if replicator.cycles_done or replicator.final_status is not None:
            print(replicator.summary(), file=sys.stderr, flush=True)
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from spark_queue.replication import describe_restored, restore

    restored = restore(args.path, args.url, if_missing=args.if_missing,
                       timestamp_ms=args.timestamp, litestream_path=args.litestream)
    print(describe_restored(args.path) if restored else f"{args.path}: nothing restored",
          file=sys.stderr)
    return 0
