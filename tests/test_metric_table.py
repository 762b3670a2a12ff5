"""The metric table: each metric's name is written once in spark_queue/, and every declaration
is one the text format can carry as written."""

from __future__ import annotations

import collections
import pathlib
import re

from spark_queue import metric_table
from spark_queue.metric_table import METRICS, Metric

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "spark_queue"


def test_each_metric_name_is_written_once_in_the_package():
    words: collections.Counter[str] = collections.Counter()
    for path in PACKAGE.rglob("*"):
        if path.is_file() and path.suffix != ".so" and "__pycache__" not in path.parts:
            words.update(re.findall(r"\bsqliteq_\w+", path.read_text("utf-8", "replace")))
    assert {metric.name: words[metric.name] for metric in METRICS
            if words[metric.name] != 1} == {}
    # And no emitter spells a name of its own: every metric-like word is a declared name
    # (but the test kit's pytest fixture, named by issue 60, which is no metric).
    families = {metric.name.split("_")[1] for metric in METRICS}  # queue, topic, store...
    assert {word for word in words if word.split("_")[1] in families} - {"sqliteq_store"} == {
        metric.name for metric in METRICS}


def test_every_declared_metric_is_in_the_exposition_once():
    declared = [value for value in vars(metric_table).values() if isinstance(value, Metric)]
    assert sorted(declared) == sorted(METRICS)
    assert len({metric.name for metric in METRICS}) == len(METRICS)


def test_each_declaration_is_valid_prometheus_text_as_written():
    for metric in METRICS:
        assert re.fullmatch(r"sqliteq_[a-z_]+", metric.name), metric
        assert metric.kind in ("gauge", "counter"), metric
        assert (metric.kind == "counter") == metric.name.endswith("_total"), metric
        assert metric.labels and all(re.fullmatch(r"[a-z][a-z_]*", label)
                                     for label in metric.labels), metric
        assert len(set(metric.labels)) == len(metric.labels), metric
        # The writer does not escape help text: none may need it.
        assert metric.help.endswith(".") and not set(metric.help) & {"\\", "\n"}, metric
