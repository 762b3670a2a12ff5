"""``sqliteq doctor`` says which read path runs on this machine and why: the compiled
reader loaded (exit 0), or reads in Python because its build is missing for this platform
or failed to load (exit 1, the reason on stdout and in one stderr line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from spark_queue.store.streams import columnar, columnar_builds
from tests.cli.cli_run import run


@pytest.fixture
def fresh_reader(monkeypatch):
    """The compiled reader's load state as in a new process."""
    monkeypatch.setattr(columnar, "_unavailable", [])
    monkeypatch.setattr(columnar, "_warned", [])
    monkeypatch.setattr(columnar, "_loaded", type(columnar._loaded)())
    return monkeypatch


def test_doctor_reports_the_compiled_read_path_and_the_builds_it_carries(capsys):
    code, out, err = run(capsys, "doctor")
    this = columnar_builds.build_for_this_machine()
    assert (code, err) == (0, ""), err
    assert f"read path: compiled (C) on {columnar_builds.machine_name()}" in out
    assert f"the build for this platform ({this.tag}) loaded" in out
    # make install builds every machine type, as a wheel carries them.
    assert "builds in this install: " + ", ".join(
        b.tag for b in columnar_builds.BUILDS) in out
    print(out, file=sys.__stdout__)  # the report, in the test's output (-s)


def test_doctor_json_is_the_read_path_of_the_python_call(capsys):
    code, out, _ = run(capsys, "doctor", "--json")
    import spark_queue

    assert code == 0
    path = spark_queue.read_path()
    assert json.loads(out) == {**path.__dict__, "builds": list(path.builds)}


def test_a_machine_type_without_a_build_reads_in_python_and_doctor_says_why(
    capsys, fresh_reader
):
    fresh_reader.setattr(columnar, "_BUILD", None)
    fresh_reader.setattr(columnar, "LIBRARY", None)
    code, out, err = run(capsys, "doctor")
    assert code == 1
    assert "read path: Python (4.8x slower)" in out
    assert "missing for this platform: spark-queue builds it for manylinux_2_17_x86_64" in out
    assert err.startswith("sqliteq doctor: reads build Arrow in Python") and err.count("\n") == 1


def test_an_install_without_this_platforms_build_says_so(capsys, fresh_reader, tmp_path):
    fresh_reader.setattr(columnar, "LIBRARY", str(tmp_path / "absent.so"))
    code, out, _ = run(capsys, "doctor")
    assert code == 1
    assert "missing for this platform: this install has no" in out
    assert "SPARK_QUEUE_ALLOW_PYTHON_READ=1" in out


def test_a_build_that_fails_to_load_is_named_with_the_loaders_error(capsys, fresh_reader):
    fresh_reader.setattr(columnar, "LIBRARY", os.path.abspath(__file__))  # not a library
    code, out, _ = run(capsys, "doctor")
    assert code == 1
    assert f"failed to load {os.path.abspath(__file__)}: " in out


def test_doctor_runs_as_a_command(tmp_path):
    done = subprocess.run([sys.executable, "-m", "spark_queue", "doctor"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "read path: compiled (C)" in done.stdout
