"""The store is a library for services without Spark: importing it loads no pyspark."""

from __future__ import annotations

import subprocess
import sys


def test_store_import_loads_no_pyspark():
    code = (
        "import sys, spark_queue, spark_queue.store, spark_queue.cli; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_pyspark_sqliteq_never_raises_even_when_the_connector_cannot_load():
    # Spark imports every pyspark_* module in ONE try block: a raise here would
    # hide every other Python data source from its lookup.
    code = (
        "import sys; sys.modules['spark_queue.connector.datasource'] = None; "
        "import pyspark_sqliteq; "
        "sys.exit(1 if hasattr(pyspark_sqliteq, 'DefaultSource') else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "format('sqliteq') is unavailable" in result.stderr


def test_importing_the_connector_package_loads_no_pyspark_until_a_class_is_used():
    code = (
        "import sys, spark_queue.connector; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
