"""``sqliteq checkpoint repair``: remove the tail of a Spark checkpoint a power cut tore."""

from __future__ import annotations

import argparse


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    checkpoint = sub.add_parser("checkpoint", help="repair a Spark checkpoint a power cut tore")
    checkpoint_sub = checkpoint.add_subparsers(
        dest="checkpoint_command", required=True, metavar="COMMAND"
    )
    p = checkpoint_sub.add_parser(
        "repair",
        help="remove the empty or unreadable newest files a power cut left in a checkpoint",
        description="Remove the torn tail of a Spark checkpoint: each newest offsets/N and "
        "commits/N that is empty, does not parse, or does not match its .crc checksum, with "
        "its .crc, and a torn metadata file. Says what it removed; a whole checkpoint is "
        "left as it is. Refuses (exit 1, nothing changed) what a power cut cannot have left: "
        "a torn entry below a whole one, a gap, a commit whose offsets are torn, an empty "
        "file under state/ or sources/.",
    )
    p.add_argument("checkpoint", help="the query's checkpointLocation (a path or a file: URI)")
    p.add_argument("--query-id", metavar="UUID",
                   help="write this query id into a torn metadata file (the id Spark's log and a "
                   "sqliteq sink's ledger name) instead of letting Spark make a new one")
    p.add_argument("--dry-run", action="store_true",
                   help="say what would be removed and change nothing")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=cmd_checkpoint_repair)


def cmd_checkpoint_repair(args: argparse.Namespace) -> int:
    return repair(args.checkpoint, query_id=args.query_id, dry_run=args.dry_run,
                  as_json=args.json)


def repair(checkpoint: str, *, query_id: str | None, dry_run: bool, as_json: bool) -> int:
    import dataclasses
    import json

    from spark_queue.checkpoint_repair import repair_checkpoint

    done = repair_checkpoint(checkpoint, query_id=query_id, dry_run=dry_run)
    if as_json:
        print(json.dumps(dataclasses.asdict(done)))
    else:
        print(done)
    return 0
