"""The aarch64 build of the compiled reader (Graviton clusters) loads and reads every
payload, key and header shape exactly as the Python path does, on an aarch64 CPU:
tests/store/streams/test_columnar_read.py run by an aarch64 Python under emulation
(arm64_python.py: qemu-user and Debian's arm64 Python), against this checkout's build."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess

import pytest

from tests.store.streams import arm64_python

pytestmark = pytest.mark.slow
HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def python():
    try:
        return arm64_python.arm64_python()
    except arm64_python.Unavailable as exc:
        pytest.skip(f"no aarch64 emulation here: {exc}")


def test_the_aarch64_build_reads_every_shape_as_the_python_path_does(python, tmp_path):
    # Spawning the interpreter again from inside the emulation needs binfmt, which a
    # container may lack: the one test that maps a child process runs natively only.
    result = subprocess.run(
        [*python, "-m", "pytest", str(HERE / "test_columnar_read.py"), "-q", "-p",
         "no:cacheprovider", "-k", "not no_second_sqlite_library", f"--rootdir={tmp_path}",
         "-c", os.devnull],
        cwd=arm64_python.ROOT, env=arm64_python.environment(arm64_python.ROOT),
        capture_output=True, text=True, timeout=1200,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    passed = re.search(r"(\d+) passed", output)
    assert passed and int(passed.group(1)) >= 40, output[-2000:]
    assert "skipped" not in output and "failed" not in output, output[-2000:]


def test_doctor_names_the_aarch64_build_loaded_under_emulation(python):
    result = subprocess.run(
        [*python, "-m", "spark_queue", "doctor"], cwd=arm64_python.ROOT,
        env=arm64_python.environment(arm64_python.ROOT), capture_output=True, text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "compiled (C) on linux-aarch64" in result.stdout, result.stdout
    assert "manylinux_2_17_aarch64" in result.stdout, result.stdout
