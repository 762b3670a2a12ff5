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
    """Run one command. Exit codes: 0 done, 1 an error (one line ``sqliteq COMMAND: message``
    on stderr), 2 a usage error (argparse's usage block: a missing argument, an unknown
    flag, a flag value of the wrong kind or out of range), 130 interrupted."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    command = command_name(args)
    try:
        return args.func(args) or 0
    except SparkQueueError as exc:
        return _fail(command, str(exc))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `sqliteq tail ... | head` closes the pipe early; that is not an error.
        return 0
    except OSError as exc:
        # A file the command itself reads or writes (not the store: that is a StoreError).
        where = f" {exc.filename!r}" if exc.filename else ""
        return _fail(command, f"cannot use{where}: {exc.strerror or exc}.")
    except Exception as exc:
        # The last line of defence: a bug, never a traceback in the user's face. -v shows it.
        logging.getLogger("spark_queue.cli").info("traceback", exc_info=True)
        return _fail(
            command,
            f"unexpected {type(exc).__name__}: {exc}. This is a bug in spark_queue; rerun "
            "with -v for the traceback and report it.",
        )


def command_name(args: argparse.Namespace) -> str:
    """``queue add``, ``dlq list``, ``publish``: the words the user typed to pick the command."""
    words = [args.command]
    nested = getattr(args, f"{args.command}_command", None)
    if nested:
        words.append(nested)
    return " ".join(words)


def _fail(command: str, message: str) -> int:
    # One line, whatever the message holds: scripts grep it, people read it.
    print(f"sqliteq {command}: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_ERROR
