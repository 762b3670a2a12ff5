"""The ``sqliteq`` admin command: a thin layer over :mod:`spark_queue.store`.

Each command module adds its subcommands with ``add_commands(subparsers)``
and sets ``func`` on its parser. :func:`main` is the one place where library
errors become a message on stderr and an exit code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from spark_queue import __version__
from spark_queue.cli import (
    checkpoint_command,
    demo_command,
    doctor_command,
    kafka_commands,
    metrics_command,
    queue_commands,
    replication_commands,
    store_commands,
    tail_command,
    topic_commands,
    worker_command,
)
from spark_queue.cli.examples import add_examples
from spark_queue.errors import SparkQueueError

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130

COMMAND_MODULES = [
    store_commands, topic_commands, tail_command, queue_commands, worker_command,
    metrics_command, kafka_commands, demo_command, doctor_command, checkpoint_command,
    replication_commands,
]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``only``, the arguments of that one command (the others are
    named, with their help line, for ``--help`` and the choice check).

    argparse spends most of a ``sqliteq --help`` on building the ~200 arguments of every
    command (a formatter and gettext look-ups each); a run needs one command's.
    """
    parser = argparse.ArgumentParser(
        prog="sqliteq",
        description="Inspect and operate spark_queue store files (topics, consumers, queues).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.add_commands(sub if only is None else _OnlyCommand(sub, only))
    add_examples(parser)
    return parser


class _OnlyCommand:
    """``add_subparsers()``'s action, where every command but ``only`` gets a bare parser."""

    def __init__(
        self, sub: argparse._SubParsersAction[argparse.ArgumentParser], only: str
    ) -> None:
        self.sub = sub
        self.only = only

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if name == self.only:
            return self.sub.add_parser(name, **kwargs)
        self.sub.add_parser(name, help=kwargs.get("help"), add_help=False)
        return _Ignored()


class _Ignored:
    """Takes the arguments of a command that is not run, and keeps none."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self


# Kafka's and rq's words. Where one means what a command of ours does, it runs that command;
# where it could mean several, the usage error names them. Never a command that deletes:
# difflib offered `prune` for `produce`.
SYNONYMS = {"produce": "publish", "consume": "tail"}
NESTED_SYNONYMS = {("topic", "describe"): "show", ("queue", "describe"): "show",
                   ("queue", "info"): "show", ("consumer", "describe"): "show"}
SUGGESTIONS = {
    "describe": "`sqliteq topic show PATH TOPIC` or `sqliteq queue show PATH QUEUE`",
    "info": "`sqliteq queues PATH` (counts per queue, as `rq info`) or "
            "`sqliteq queue workers PATH`",
    "list": "`sqliteq topics PATH`, `sqliteq queues PATH` or `sqliteq consumers PATH`",
    "delete": "`sqliteq topic delete PATH TOPIC` or `sqliteq job remove PATH QUEUE ID` "
              "(each says what it would delete first)",
}
# Commands difflib may never suggest for a mistyped word: they delete.
DELETING = frozenset({"prune"})


def _command_word(argv: Sequence[str]) -> str | None:
    # The top-level flags take no value: the first other word names the command.
    return next((word for word in argv if not word.startswith("-")), None)


def _our_words(argv: list[str]) -> list[str]:
    """``argv`` with Kafka's and rq's synonyms replaced by ours (``produce`` -> ``publish``,
    ``topic describe`` -> ``topic show``)."""
    at = next((i for i, word in enumerate(argv) if not word.startswith("-")), None)
    if at is None:
        return argv
    argv = list(argv)
    argv[at] = SYNONYMS.get(argv[at], argv[at])
    if at + 1 < len(argv):
        argv[at + 1] = NESTED_SYNONYMS.get((argv[at], argv[at + 1]), argv[at + 1])
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Exit codes: 0 done, 1 an error (one line ``sqliteq COMMAND: message``
    on stderr), 2 a usage error (argparse's usage block: a missing argument, an unknown
    flag, a flag value of the wrong kind or out of range), 3 (``worker`` only) handlers were
    still running when the grace period ended, 130 interrupted."""
    argv = _our_words(sys.argv[1:] if argv is None else list(argv))
    word = _command_word(argv)
    parser = build_parser(only=word or "")
    if word is not None and word not in _commands(parser):
        _unknown_command(parser, word)
    args, extra = parser.parse_known_args(argv)
    if extra:
        words = [args.command, getattr(args, f"{args.command}_command", None)]
        _positionals_after_flags(_chosen(parser, words), vars(args), extra)
    import logging  # after parsing: --help and usage errors never need it

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


def _chosen(parser: argparse.ArgumentParser, words: list[str | None]) -> argparse.ArgumentParser:
    """The parser of the command ``words`` name (``["publish", None]``, ``["queue", "add"]``)."""
    for word in words:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word is None:
            break
        parser = subs[0].choices[word]
    return parser


def _positionals_after_flags(
    command: argparse.ArgumentParser, values: dict[str, Any], extra: list[str]
) -> None:
    """Flags before the value, in any order (Kafka's tools put them first):
    ``publish s.sqlite t --key k v``. argparse fills an optional positional (VALUE, a
    queue, job ids) from the words before the first flag, so the words after it are left
    over; they go to those positionals of ``command``, in order, into ``values`` (the parsed
    arguments by name). Anything else is the command's usage error."""
    words = list(extra)
    for action in command._actions:
        if action.option_strings or action.nargs not in ("?", "*") or not words:
            continue
        if words[0].startswith("-") and words[0] != "-":
            break  # an unknown flag
        if action.nargs == "?":
            if values.get(action.dest) is None:
                values[action.dest] = command._get_values(action, [words.pop(0)])
            continue
        taken = []
        while words and not (words[0].startswith("-") and words[0] != "-"):
            taken.append(words.pop(0))
        values[action.dest] = (list(values.get(action.dest) or [])
                               + command._get_values(action, taken))
    if words:
        command.error(f"unrecognized arguments: {' '.join(words)}")


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(sub.choices)


def _unknown_command(parser: argparse.ArgumentParser, word: str) -> None:
    """A usage error (exit 2) naming the closest commands: `sqliteq tial` -> `tail`."""
    import difflib

    if word in SUGGESTIONS:
        hint = f" Did you mean {SUGGESTIONS[word]}?"
    else:
        safe = [name for name in _commands(parser) if name not in DELETING] + list(SYNONYMS)
        near = difflib.get_close_matches(word, safe, n=3, cutoff=0.6)
        near = list(dict.fromkeys(SYNONYMS.get(name, name) for name in near))
        hint = f" Did you mean {' or '.join(near)}?" if near else ""
    parser.error(f"unknown command {word!r}.{hint} `sqliteq --help` lists the commands.")


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
