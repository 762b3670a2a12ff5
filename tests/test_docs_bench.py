"""BENCHMARKS.md's commands are the benchmarks that exist, and they run as written."""

from __future__ import annotations

import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from benchmarks import kafka_broker
from benchmarks.__main__ import BENCHMARKS, build_parser

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCHMARKS_MD = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMAND = re.compile(r"`python -m benchmarks ([^`|]+)`")
KAFKA_BENCHMARKS = ("store", "sink", "source", "latency")  # those with --kafka-bootstrap


def test_every_benchmark_has_a_section_with_its_command():
    documented = {shlex.split(args)[0] for args in COMMAND.findall(BENCHMARKS_MD)}
    assert documented == set(BENCHMARKS)


def test_every_documented_benchmark_command_parses_with_its_flags():
    parser = build_parser()
    for args in COMMAND.findall(BENCHMARKS_MD):
        parser.parse_args(shlex.split(args))  # exits (fails the test) on an unknown flag


def test_readme_lists_every_benchmark():
    listed = re.search(r"`python -m benchmarks ([a-z|]+)`", README).group(1)
    assert listed.split("|") == list(BENCHMARKS)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_benchmark_help_imports_neither_pyspark_nor_kafka(name):
    code = (
        "import sys\n"
        "from benchmarks.__main__ import main\n"
        "try:\n"
        f"    main([{name!r}, '--help'])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "bad = sorted(m for m in sys.modules\n"
        "             if m.split('.')[0] in ('pyspark', 'py4j', 'confluent_kafka'))\n"
        "sys.exit(f'--help imported {bad}' if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--" in result.stdout
    if name == "latency":
        assert "--events" in result.stdout and "--gap-ms" in result.stdout
    if name in KAFKA_BENCHMARKS:
        assert "--kafka-bootstrap" in result.stdout


def test_kafka_is_skipped_with_one_line_when_no_broker_is_given(capsys):
    assert kafka_broker.connect(None) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("kafka: skipped")


def test_the_kafka_comparisons_are_documented_with_the_broker_script():
    assert (ROOT / "scripts" / "kafka-broker").stat().st_mode & 0o111
    assert "## Against Kafka" in BENCHMARKS_MD
    for name in KAFKA_BENCHMARKS:
        assert f"python -m benchmarks {name}" in BENCHMARKS_MD
    kafka_commands = [c for c in COMMAND.findall(BENCHMARKS_MD) if "--kafka-bootstrap" in c]
    assert {shlex.split(c)[0] for c in kafka_commands} == set(KAFKA_BENCHMARKS)
