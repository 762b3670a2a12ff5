"""The docs document what the code offers, and CI runs what the README says."""

from __future__ import annotations

import argparse
import pathlib
import re

import pytest

from spark_queue.cli import build_parser
from tests.docs_pages import section, text

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = text("README.md")
CLI_REFERENCE = text("docs/cli.md")


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> list[tuple[str, list[str]]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = _commands(sub, f"{prefix}{name} ")
                flags = [opt for a in sub._actions for opt in a.option_strings
                         if opt.startswith("--") and opt not in ("--help", "--json")]
                found.extend(nested or [(f"{prefix}{name}", flags)])
    return found


def _command_rows(command: str) -> list[str]:
    """The rows of docs/cli.md's tables whose first cell is ``sqliteq <command> ...``."""
    return [line for line in CLI_REFERENCE.splitlines()
            if line.startswith(f"| `sqliteq {command}") and
            line[len(f"| `sqliteq {command}"):][:1] in (" ", "`")]


@pytest.mark.parametrize(("command", "flags"), _commands(build_parser()))
def test_every_cli_command_and_flag_is_in_its_cli_reference_row(command, flags):
    rows = _command_rows(command)
    assert rows, f"docs/cli.md has no row for `sqliteq {command}`"
    documented = " ".join(rows)
    missing = [flag for flag in flags if flag not in documented]
    assert not missing, f"docs/cli.md rows of `sqliteq {command}` lack {missing}"


def test_ci_runs_the_readme_test_command():
    block = re.search(r"```bash\n(.*?)```", section("README.md", "## The two commands"), re.S)
    test_command = next(line.split("#")[0].strip() for line in block.group(1).splitlines()
                        if "test" in line)
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in [line.strip() for line in ci.splitlines()]


def test_bad_input_inventory_names_tests_that_exist():
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = contributing[contributing.index("## Bad input and what it gets"):]
    references = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", section)
    assert len(references) >= 30
    for path, name in references:
        source = (ROOT / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {name}\(", source, re.M), f"{path}::{name} does not exist"
