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
