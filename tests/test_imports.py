"""The store is a library for services without Spark: importing it loads no pyspark; the
package's front door (``from spark_queue import Store, ...``) loads each name's module only
when the name is asked for."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
import tomllib

import pytest

import spark_queue


def run_python(code: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter, so modules this test process loaded cannot count."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def loads_no_pyspark(imports: str) -> subprocess.CompletedProcess:
    return run_python(
        f"import sys, {imports}; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )


def loaded_after(code: str) -> list[str]:
    """The modules of interest that ``code`` left loaded, in a fresh interpreter."""
    result = run_python(
        f"import json, sys; {code}; "
        "watched = ('pyspark', 'py4j', 'pyarrow', 'apsw', 'spark_queue.store', "
        "'spark_queue.worker', 'spark_queue.connector'); "
        "print(json.dumps(sorted({w for w in watched for m in sys.modules "
        "if m == w or m.startswith(w + '.')})))"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def test_importing_the_package_loads_no_pyspark_no_pyarrow_and_no_worker():
    assert loaded_after("import spark_queue") == []


def test_the_front_door_names_load_their_modules_only_when_asked_for():
    assert loaded_after("from spark_queue import register") == []
    assert loaded_after("from spark_queue import Store, Queue, Producer") == [
        "apsw", "pyarrow", "spark_queue.store"
    ]
    assert loaded_after("from spark_queue import Worker") == [
        "apsw", "pyarrow", "spark_queue.store", "spark_queue.worker"
    ]


def test_the_front_door_names_are_the_library_s_own_classes():
    import spark_queue
    import spark_queue.store
    import spark_queue.worker

    assert spark_queue.Store is spark_queue.store.Store
    assert spark_queue.Queue is spark_queue.store.Queue
    assert spark_queue.Producer is spark_queue.store.Producer
    assert spark_queue.Record is spark_queue.store.Record
    assert spark_queue.NewJob is spark_queue.store.NewJob
    assert spark_queue.Worker is spark_queue.worker.Worker
    assert callable(spark_queue.register)
    assert {"Store", "Queue", "Producer", "Record", "NewJob", "Worker", "register"} <= set(
        dir(spark_queue))
    assert set(spark_queue.__all__) <= set(dir(spark_queue))


def test_an_unknown_name_is_an_attribute_error():
    import spark_queue

    with pytest.raises(AttributeError, match="no attribute 'Stor'"):
        spark_queue.Stor  # noqa: B018


def test_opening_a_store_for_offsets_loads_no_pyarrow_compute(tmp_path):
    # A Spark query's planning process opens the store for offsets before its first
    # trigger (availableNow); pyarrow.compute (~60 ms) waits for the first read.
    path = str(tmp_path / "s.sqlite")
    result = run_python(
        "import sys; from spark_queue.store import Store\n"
        f"with Store({path!r}) as s:\n"
        "    s.publish('t', 'x'); s.topic('t').latest_offset(); s.topic('t').earliest_offset()\n"
        "    assert 'pyarrow.compute' not in sys.modules, 'loaded before a read'\n"
        "    assert s.read_arrow_payloads('t', 0, 1).num_rows == 1\n"
    )
    assert result.returncode == 0, result.stdout + result.stderr


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


def test_the_version_is_written_once_and_the_build_reads_it_from_the_package():
    """The front door's ``__version__`` is the one place: the wheel's metadata reads it
    (hatch's dynamic version), so a release changes one line (issue 62)."""
    root = pathlib.Path(__file__).resolve().parents[1]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"]
    assert "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["hatch"]["version"]["path"] == "spark_queue/__init__.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+", spark_queue.__version__)
    assert sum("__version__ =" in line
               for path in (root / "spark_queue").rglob("*.py")
               for line in path.read_text(encoding="utf-8").splitlines()) == 1
