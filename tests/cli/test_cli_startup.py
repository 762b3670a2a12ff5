"""`sqliteq --help` starts fast (#26): building the parser and answering a usage error
import no store, pyarrow, pyspark or worker. The speed itself is measured side by side with
a bare `import apsw` by scripts/check-cli-startup, not here."""

from __future__ import annotations

import ast
import subprocess
import sys

HEAVY = ("pyarrow", "pyspark", "numpy", "apsw", "spark_queue.store", "spark_queue.worker",
         "spark_queue.connector", "logging", "datetime", "threading", "dataclasses", "inspect")

PROBE = """
import sys
from spark_queue.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = {heavy!r}
print(repr(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m.startswith(heavy))))
"""


def _loaded(*argv: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv],
        capture_output=True, text=True, check=True,
    )
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


def test_help_and_usage_errors_import_nothing_heavy():
    assert _loaded("--help") == []
    assert _loaded("tail", "--help") == []
    assert _loaded("queue", "add", "--help") == []
    assert _loaded("tial") == []  # a usage error


def test_a_command_that_runs_imports_the_store_when_it_runs(tmp_path):
    assert "spark_queue.store" in _loaded("topics", str(tmp_path / "missing.sqlite"))

