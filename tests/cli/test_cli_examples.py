"""Every command's --help ends with an example, and every example parses as written."""

from __future__ import annotations

import argparse
import shlex

import pytest

from spark_queue.cli import build_parser
from spark_queue.cli.examples import EXAMPLES, examples


def commands(parser: argparse.ArgumentParser, path: str = ""):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield from commands(command, f"{path} {name}".strip())
            return
    yield path, parser


ALL = dict(commands(build_parser()))


def test_every_command_has_an_example_and_every_example_a_command():
    assert sorted(EXAMPLES) == sorted(ALL)


@pytest.mark.parametrize("path", sorted(ALL))
def test_the_examples_are_in_the_help_and_parse(path):
    assert "example" in (ALL[path].epilog or "")
    for example in examples(path):
        line = example.split("|")[-1]  # what sqliteq runs, after a shell pipe
        argv = shlex.split(line.replace("$(date +%F)", "2026-01-01"))[1:]
        args = build_parser(only=argv[0]).parse_args(argv)
        assert args.command == argv[0]


@pytest.mark.parametrize("path", sorted(ALL))
def test_help_shows_one_example_per_line_and_never_breaks_a_flag(path, monkeypatch):
    # Issue 34: publish's three examples were joined with ` | ` (one pipeline, it read), and
    # at 80 columns `--retention-rows` broke after `--retention-`.
    monkeypatch.setenv("COLUMNS", "80")
    lines = ALL[path].format_help().splitlines()
    for example in examples(path):
        assert "  " + example in lines, f"{example!r} is not a line of its own"
    broken = [line for line in lines if line.rstrip().endswith("-") and
              line.rstrip()[-2:-1].isalnum()]
    assert broken == []


@pytest.mark.parametrize("path", sorted(ALL))
def test_every_argument_has_help_text(path):
    missing = [a.option_strings or a.dest for a in ALL[path]._actions
               if not a.help and not isinstance(a, argparse._HelpAction)]
    assert missing == []


@pytest.mark.parametrize("path", sorted(ALL))
def test_every_flag_ending_in_ms_takes_and_says_a_duration(path):
    """One unit vocabulary: the -ms flags read 30s or 1500ms, and their usage says so."""
    flags = [a for a in ALL[path]._actions if a.option_strings[-1:] and
             a.option_strings[-1].endswith("-ms")]
    assert [a.option_strings for a in flags if a.metavar != "DURATION"] == []
