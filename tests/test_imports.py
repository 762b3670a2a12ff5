"""The store is a library for services without Spark: importing it loads no pyspark."""

from __future__ import annotations

import subprocess
import sys


def run_python(code: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter, so modules this test process loaded cannot count."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def loads_no_pyspark(imports: str) -> subprocess.CompletedProcess:
    return run_python(
        f"import sys, {imports}; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )


def test_store_import_loads_no_pyspark():
    result = loads_no_pyspark("spark_queue, spark_queue.store, spark_queue.cli")
    assert result.returncode == 0, result.stdout + result.stderr


def test_pyspark_sqliteq_never_raises_even_when_the_connector_cannot_load():
    # Spark imports every pyspark_* module in ONE try block: a raise here would
    # hide every other Python data source from its lookup.
    result = run_python(
        "import sys; sys.modules['spark_queue.connector.datasource'] = None; "
        "import pyspark_sqliteq; "
        "sys.exit(1 if hasattr(pyspark_sqliteq, 'DefaultSource') else 0)"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "format('sqliteq') is unavailable" in result.stderr


def test_importing_the_connector_package_loads_no_pyspark_until_a_class_is_used():
    result = loads_no_pyspark("spark_queue.connector")
    assert result.returncode == 0, result.stdout + result.stderr
