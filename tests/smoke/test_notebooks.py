"""Every notebook runs as Databricks runs an imported one, on every supported pyspark.

Cell by cell (the source split at ``# COMMAND ----------``) in one namespace
holding ``spark`` (the already running test session, with Delta where
delta-spark is installed), ``display`` and a ``dbutils`` whose ``work_dir``
widget names the test's directory; from a working directory outside the
checkout. Each notebook runs twice in the same directory: a rerun resumes
from its checkpoints and its assertions still hold. The matrix runs this file
from the installed wheel.
"""

from __future__ import annotations

import os
import pathlib

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[2] / "notebooks").glob("*.py"))
CELL_SEPARATOR = "\n# COMMAND ----------\n"


class Widgets:
    """The part of Databricks' ``dbutils.widgets`` the notebooks use."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.defaults: dict[str, str] = {}

    def text(self, name: str, default: str, label: str | None = None) -> None:
        self.defaults[name] = default

    def get(self, name: str) -> str:
        return self.values.get(name, self.defaults[name])


class DBUtils:
    def __init__(self, work_dir: str, tables_dir: str) -> None:
        self.widgets = Widgets({"work_dir": work_dir, "tables_dir": tables_dir})


def cells(notebook: pathlib.Path) -> list[str]:
    source = notebook.read_text(encoding="utf-8")
    assert source.startswith("# Databricks notebook source\n")
    return source.split(CELL_SEPARATOR)


def run_cell_by_cell(notebook: pathlib.Path, spark, work_dir: str, tables_dir: str) -> dict:
    shown = []
    namespace = {"__name__": "__main__", "spark": spark, "display": shown.append,
                 "dbutils": DBUtils(work_dir, tables_dir)}
    for number, cell in enumerate(cells(notebook), start=1):
        exec(compile(cell, f"{notebook.name} cell {number}", "exec"), namespace)
    namespace["shown"] = shown
    return namespace


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_a_notebook_runs_cell_by_cell_in_an_existing_session_and_a_rerun_resumes(
    notebook, spark, tmp_path, shared_dir, monkeypatch
):
    """Under the standalone master (tests/cluster) the work_dir is the driver's disk, which
    executors cannot see, and the tables go to a directory every node sees."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    monkeypatch.chdir(outside)
    work_dir = str(tmp_path / "work")
    for _ in range(2):
        namespace = run_cell_by_cell(notebook, spark, work_dir, str(shared_dir))
        assert namespace["shown"], "the notebook displayed nothing"
        for query in spark.streams.active:
            query.stop()
    assert os.listdir(work_dir), "the notebook kept nothing in its work_dir"
    assert not list(outside.iterdir()), "the notebook wrote outside its work_dir"
