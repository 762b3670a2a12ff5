"""The kit's own rules: it never sleeps, and loading it (or its pytest plugin) loads no Spark."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import textwrap

import spark_queue.testing

KIT = pathlib.Path(spark_queue.testing.__file__).parent


def test_the_kit_never_sleeps():
    """It waits on conditions (offsets, a query's termination), never for a duration."""
    sleeping = [f"{path.name}:{number}" for path in sorted(KIT.glob("*.py"))
                for number, line in enumerate(path.read_text().splitlines(), start=1)
                if re.search(r"\bsleep\s*\(|time\.sleep|from time import", line)]
    assert sleeping == []


def test_importing_the_kit_and_its_plugin_loads_no_pyspark():
    code = ("import sys, spark_queue.testing, spark_queue.testing.plugin; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')); "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_store_only_test_with_the_plugin_starts_no_spark(tmp_path):
    (tmp_path / "test_store_only.py").write_text(textwrap.dedent("""
        import sys

        def test_publish(sqliteq_store):
            sqliteq_store.publish("in", {"n": 1})
            assert [e.value for e in sqliteq_store.read("in")] == [{"n": 1}]
            assert not [m for m in sys.modules if m.split(".")[0] == "pyspark"]
    """))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "spark_queue.testing.plugin", str(tmp_path / "test_store_only.py")],
        cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
