"""The docs document what the code offers, and CI runs what the README says."""

from __future__ import annotations

import argparse
import pathlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from spark_queue.cli import build_parser
from spark_queue.metric_table import METRICS
from tests.docs_pages import blocks, pages, section, text

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


def test_make_test_type_checks_the_package_and_benchmarks_before_the_tests():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^test: .*\n((?:\t.*\n)+)", makefile, re.M).group(1).splitlines()
    assert recipe[0].strip() == "$(PY) -m mypy spark_queue benchmarks", recipe
    assert any("-m pytest" in line for line in recipe[1:]), recipe


ROOTS = ("spark_queue/", "benchmarks/")  # the code CONTRIBUTING.md maps file by file


def test_the_contributing_map_names_every_module_of_the_package_and_benchmarks():
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = contributing[contributing.index("## Layout and tests"):]
    opening = section.index("```\n") + 4
    block = section[opening:section.index("\n```", opening)]
    mapped, folders = set(), []
    for line in block.splitlines():
        name = line.split()[0] if line.strip() else ""
        depth = (len(line) - len(line.lstrip())) // 2
        if not name or not (depth or name in ROOTS) or depth > len(folders):
            continue  # a continuation line, or a top-level entry outside the code
        del folders[depth:]
        if name.endswith("/"):
            folders.append(name)
        else:
            mapped.add("".join(folders) + name)
    files = {p.relative_to(ROOT).as_posix() for root in ROOTS for p in (ROOT / root).rglob("*")
             if p.suffix == ".py" or p.name == "py.typed"}
    assert sorted(files - mapped) == [], "modules missing from CONTRIBUTING.md's map"
    assert sorted(mapped - files) == [], "CONTRIBUTING.md's map names modules that are gone"


def test_bad_input_inventory_names_tests_that_exist():
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = contributing[contributing.index("## Bad input and what it gets"):]
    references = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", section)
    assert len(references) >= 30
    for path, name in references:
        source = (ROOT / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {name}\(", source, re.M), f"{path}::{name} does not exist"


def test_the_cli_exit_code_list_names_the_workers_3_and_what_a_supervisor_needs():
    """Issue 34: 3 was in the worker's row only, and systemd marks a unit that exits 3 failed."""
    from spark_queue.cli.worker_command import EXIT_JOBS_INTERRUPTED

    codes = CLI_REFERENCE[:CLI_REFERENCE.index("| command |")]
    codes = codes[codes.index("Exit codes:"):]
    assert f"; {EXIT_JOBS_INTERRUPTED} (`worker` only)" in " ".join(codes.split())
    assert "SuccessExitStatus=3" in codes and "--grace-ms" in codes


def test_readme_docs_and_notebooks_import_the_users_nouns_from_the_front_door():
    """``from spark_queue import Store`` is the way in; a page that reaches into
    spark_queue.store for a name the face has teaches the long way round."""
    import re

    import spark_queue

    face = set(spark_queue.__all__)
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "notebooks").glob("*.py"))]
    long_way = []
    for page in pages:
        for line in page.read_text(encoding="utf-8").splitlines():
            found = re.match(r"\s*from spark_queue\.(store|worker) import (.+)", line)
            if found and {n.strip() for n in found.group(2).split(",")} & face:
                long_way.append(f"{page.name}: {line.strip()}")
    assert long_way == []


# docs/operations.md: the alert rules, the scrape config and the systemd units it shows are
# the files in conf/ as they are; the rules name only metrics `sqliteq metrics` has; every
# unit's and cron's command parses; every unit passes `systemd-analyze verify`.
OPERATIONS = "docs/operations.md"
ALERTS = ROOT / "conf" / "prometheus" / "sqliteq-alerts.yml"
SCRAPE = ROOT / "conf" / "prometheus" / "prometheus.yml"
UNITS = sorted((ROOT / "conf" / "systemd").iterdir())
INSTALLED = "/opt/app/venv/bin/sqliteq"  # the one install path of every page and unit


def test_the_page_shows_the_alert_rules_and_the_scrape_config_as_they_are():
    shown = [block.code for block in blocks(OPERATIONS, "yaml")]
    assert sorted(shown) == sorted([ALERTS.read_text(encoding="utf-8"),
                                   SCRAPE.read_text(encoding="utf-8")])


def test_every_metric_an_alert_rule_names_is_one_sqliteq_metrics_shows():
    named = set(re.findall(r"\bsqliteq_[a-z_]+", ALERTS.read_text(encoding="utf-8")))
    shown = {metric.name for metric in METRICS}
    assert named and named <= shown, named - shown


def test_the_page_shows_every_shipped_unit_file_as_it_is():
    assert {p.name for p in UNITS} == {
        "sqliteq-housekeeping.service", "sqliteq-housekeeping.timer",
        "sqliteq-worker@.service", "sqliteq-metrics.service"}
    shown = sorted(block.code for block in blocks(OPERATIONS, "ini"))
    assert shown == sorted(p.read_text(encoding="utf-8") for p in UNITS)


def test_the_units_and_crons_commands_are_sqliteq_commands_that_parse():
    expected = {"sqliteq-housekeeping.service": "cmd_housekeeping",
                "sqliteq-worker@.service": "cmd_worker", "sqliteq-metrics.service": "cmd_metrics"}
    commands = [(p.name, line.split("=", 1)[1]) for p in UNITS
                for line in p.read_text(encoding="utf-8").splitlines()
                if line.startswith("ExecStart=")]
    cron = blocks(OPERATIONS, "text")[0].code.splitlines()
    commands += [("sqliteq-housekeeping.service", line.split(None, 5)[5].split(">")[0])
                 for line in cron]
    cron_too = [*expected, "sqliteq-housekeeping.service"]
    assert sorted(name for name, _ in commands) == sorted(cron_too)
    for name, command in commands:
        words = shlex.split(command)
        assert words[0] == INSTALLED
        args = build_parser(words[1]).parse_args(words[1:])
        assert args.func.__name__ == expected[name]
        if name.startswith("sqliteq-housekeeping"):
            assert args.run


def test_every_page_installs_the_command_at_one_path():
    paths = set()
    for page in pages():
        paths |= set(re.findall(r"(/[\w./-]+/bin/sqliteq)\b", (ROOT / page).read_text("utf-8")))
    assert paths == {INSTALLED}


def test_every_shipped_unit_passes_systemd_analyze_verify(tmp_path):
    # verify wants each ExecStart's program to exist: the units as copied, pointed at this
    # venv's sqliteq (and a folder that exists) instead of /opt/app.
    here = str(Path(sys.executable).parent / "sqliteq")
    for unit in UNITS:
        text = unit.read_text(encoding="utf-8").replace(INSTALLED, here)
        (tmp_path / unit.name).write_text(text.replace("WorkingDirectory=/opt/app",
                                                       f"WorkingDirectory={tmp_path}"))
    names = [u.name.replace("@.", "@1.") for u in UNITS]
    for name in names:
        if "@1." in name:
            (tmp_path / name).symlink_to(tmp_path / name.replace("@1.", "@."))
    done = subprocess.run(["systemd-analyze", "verify", "--man=no", *names], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_no_page_installs_spark_queue_from_an_index_it_is_not_on():
    # spark-queue is not on PyPI: `pip install spark-queue` fails today and would install
    # whatever someone later registers under the name. Pages install a checkout or a wheel.
    from_index = re.compile(r"pip install\b[^`\n]*?(?<![\w./\[-])spark[-_]queue\b(?![\w.-]*\.whl)")
    found = [f"{page}: {line.strip()}" for page in pages()
             for line in (ROOT / page).read_text(encoding="utf-8").splitlines()
             if from_index.search(line)]
    assert found == []
    extras = re.search(r'pip install "dist/spark_queue-[\d.]+-py3-none-any\.whl\[(\w+)\]"',
                       text("docs/pipelines.md"))
    assert extras and f"\n{extras.group(1)} = [" in (ROOT / "pyproject.toml").read_text()
