"""The option modules stay free of pyspark, so the table can be parsed, tested and documented
without Spark (and, once the connector package imports lazily, imported without it)."""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest

CONNECTOR = pathlib.Path(__file__).resolve().parents[2] / "spark_queue" / "connector"
OPTION_MODULES = ("option_table.py", "offset_json.py", "source/source_options.py",
                  "sink/sink_options.py")
ALLOWED_PROJECT = (
    "spark_queue", "spark_queue.defaults", "spark_queue.errors", "spark_queue.times",
    "spark_queue.store",
    "spark_queue.store.file.names",
    "spark_queue.connector", "spark_queue.connector.option_table",
    "spark_queue.connector.offset_json",
)


def imported_modules(path: pathlib.Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("module", OPTION_MODULES)
def test_option_modules_import_only_the_stdlib_errors_and_the_store(module):
    for name in imported_modules(CONNECTOR / module):
        top = name.split(".")[0]
        if top == "spark_queue":
            assert name in ALLOWED_PROJECT, f"{module} imports {name}"
        else:
            assert top in sys.stdlib_module_names or top == "__future__", f"{module} imports {name}"
