"""docs/testing.md's tests pass as written: the page's files written out, then run by pytest in
a child process with the plugin as installed, as a user runs them (on every pyspark of the
matrix too). The Kafka tier's file needs a broker: tests/kafka/test_kit_kafka_tier.py runs it.

Self-contained on purpose (the matrix runs it with the checkout off ``sys.path``), as
test_doc_examples.py is.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "testing.md"
FENCE = re.compile(r"^```python\n(.*?)^```[ \t]*$", re.M | re.S)
KAFKA_TIER = "test_pipeline_kafka.py"
#: The tests the unit tier's files hold, sqliteq_both's counted twice.
UNIT_TESTS = 7


def page_files() -> dict[str, str]:
    """The page's ```python blocks by the file each names on its first line (``# NAME.py``)."""
    files = {}
    for match in FENCE.finditer(PAGE.read_text(encoding="utf-8")):
        code = match.group(1)
        name = code.splitlines()[0].removeprefix("# ").strip()
        assert name.endswith(".py"), f"docs/testing.md: a block without its file name: {name}"
        files[name] = code
    return files


def run_page_tests(directory: pathlib.Path, tests: list[str], **env: str):
    """Write every file of the page into ``directory``, then run pytest on ``tests`` there."""
    for name, code in page_files().items():
        (directory / name).write_text(code, encoding="utf-8")
    # -p names the plugin for a checkout whose install predates its entry point; with the
    # entry point (a wheel) pytest finds it registered under that name and loads it once.
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "spark_queue.testing.plugin", *tests],
        cwd=directory, env=dict(os.environ, **env), capture_output=True, text=True,
        timeout=1200)


def test_the_page_names_a_file_for_each_block():
    assert sorted(page_files()) == sorted([
        "pipeline.py", "test_pipeline.py", "test_actions.py", "test_faults.py",
        "test_connect.py", "test_flows.py", KAFKA_TIER])


@pytest.mark.slow
def test_the_testing_pages_tests_pass_as_written(tmp_path):
    tests = [name for name in page_files() if name.startswith("test_") and name != KAFKA_TIER]
    done = run_page_tests(tmp_path, tests)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-8000:]
    assert re.search(rf"\b{UNIT_TESTS} passed\b", done.stdout), done.stdout[-3000:]
    assert not re.search(r"skipped|xfail|deselected", done.stdout), done.stdout[-3000:]
