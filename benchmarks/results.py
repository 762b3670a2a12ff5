"""The benchmarks' figures in a file of the repository (benchmarks/results.json).

Every table a benchmark prints through :func:`benchmarks.report.print_table`, and every
figure it hands :func:`record`, lands in the file under its section with the date, the
machine's load average and the command that produced it, replacing that section's
previous run. tests/test_docs_bench.py fails when README.md or docs/*.md quotes a
performance figure that the file does not hold, so prose cannot drift from the runs.

Only a run started by ``python -m benchmarks`` records (:func:`start`); importing a
benchmark, or calling one from a test, writes nothing.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
from collections.abc import Mapping
from typing import Any

RESULTS_PATH = pathlib.Path(__file__).resolve().parent / "results.json"

_command: str | None = None


def start(argv: list[str]) -> None:
    """Record what this run measures, under ``python -m benchmarks`` + ``argv``."""
    global _command
    _command = " ".join(["python -m benchmarks", *argv])


#: A recorded figure: a measurement, the measurements of one label (rounds, runs), or a note.
Figure = float | str | list[float]


def record(section: str, figures: Mapping[str, Figure], path: pathlib.Path | None = None,
           command: str | None = None) -> None:
    """Store ``figures`` (label -> value) as ``section``'s current run."""
    command = command or _command
    if command is None:
        return
    path = path or RESULTS_PATH
    results = read_results(path)
    results[section] = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "command": command,
        "figures": {k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()},
    }
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(results, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                         encoding="utf-8")
    temporary.replace(path)


def read_results(path: pathlib.Path | None = None) -> dict[str, Any]:
    path = path or RESULTS_PATH
    if not path.exists():
        return {}
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded
