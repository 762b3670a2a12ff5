"""The ``sqliteq`` admin command: a thin layer over :mod:`spark_queue.store`.

Each command module adds its subcommands with ``add_commands(subparsers)``
and sets ``func`` on its parser. :func:`main` is the one place where library
errors become a message on stderr and an exit code.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from spark_queue import __version__
from spark_queue.cli import (
    demo,
    metrics_command,
    queue_commands,
    store_commands,
    tail_command,
    topic_commands,
)
from spark_queue.errors import SparkQueueError

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130

COMMAND_MODULES = [
    store_commands, topic_commands, tail_command, queue_commands, metrics_command, demo
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sqliteq",
        description="Inspect and operate spark_queue store files (topics, consumers, queues).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return args.func(args) or 0
    except SparkQueueError as exc:
        print(f"sqliteq {args.command}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `sqliteq tail ... | head` closes the pipe early; that is not an error.
        return 0
