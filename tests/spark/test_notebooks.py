"""Every notebook runs top to bottom, as CI would run it, in the shared SparkSession.

Notebooks are Databricks source files (``# Databricks notebook source``):
they import into Databricks as notebooks and run locally as Python. Here they
get the test session as their ``spark``, the way Databricks provides one.
"""

from __future__ import annotations

import pathlib
import runpy

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[2] / "notebooks").glob("*.py"))


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(notebook, spark, tmp_path, monkeypatch):
    assert notebook.read_text().startswith("# Databricks notebook source\n")
    monkeypatch.setenv("SPARK_QUEUE_NOTEBOOK_DIR", str(tmp_path))
    runpy.run_path(str(notebook), init_globals={"spark": spark}, run_name="__main__")
    for query in spark.streams.active:
        query.stop()
