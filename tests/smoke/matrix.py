"""Run the smoke suite on every supported pyspark minor, from a freshly built wheel.

    python tests/smoke/matrix.py            # part of `make test` (and so of CI)
    python tests/smoke/matrix.py --prepare  # only the venvs (make test runs it beside pytest)
    SPARK_QUEUE_MATRIX=4.0.5,4.2.0@3.13 python tests/smoke/matrix.py

Builds the wheel once, then for each pyspark version below: a venv under
``.venv-matrix/`` (kept between runs; the wheel is reinstalled every time)
with that pyspark (and delta-spark 4.4.0 where it accepts the version), the
wheel installed beside it (WITHOUT extras, as on a platform that brings its
own Spark such as Databricks; on 4.2 with the ``spark`` extra, so its range is
checked), and ``pytest tests/smoke`` run from a temp directory (two versions at a time,
``SPARK_QUEUE_MATRIX_JOBS`` to change it), so the
checkout is never importable and Spark's lookup must find the installed
``pyspark_sqliteq``. The suite: the contract, the drain of a backlog in bounded
batches (with a kill), the notebooks cell by cell in the running session,
every Spark snippet of the README and docs/ (docs/testing.md's pytest files included),
``sqliteq demo``, the test kit's example suite (tests/kit_examples, on Classic and Connect)
and, from 4.1 on, the
declarative pipeline of docs/pipelines.md (``spark-pipelines run`` twice). This is the
only place the smoke suite runs in ``make test``: what users run, from the
wheel, once per version. ``4.2.0@3.13`` and ``4.3.0@3.13`` are pyspark 4.2.0 and 4.3.0
on Debian 13's Python 3.13 and OpenJDK 21 (tests/smoke/trixie_python.py, trixie_java.py)
where the others run on this interpreter and the machine's Java 17: they run the
contract (with the executors' compiled read and a ``realTime`` trigger), the demo, the
notebooks (Delta on 4.2) and the serverless shape (PY313_TESTS), enough to prove
spark_queue, its compiled reader and Spark's Python workers run on 3.13 and Java 21
(Databricks Runtime 19 has no Java 17). Exits non-zero if any version
fails or collects no test.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import time
import venv
import zipfile
from concurrent.futures import ThreadPoolExecutor

import trixie_java  # tests/smoke/, this script's folder
import trixie_python

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The newest patch of each supported minor on PyPI (update with new releases); on 4.2
# the newest that delta-spark 4.4.0 accepts, as the full suite's venv.
VERSIONS = ("4.0.5", "4.1.4", "4.2.0", "4.3.0")
#: Run on Python 3.13 and Java 21 (``pyspark@python``), both from Debian 13: 4.2.0, the
#: pyspark of the full suite, with Delta and the ``spark`` extra's range check, and 4.3.0,
#: the newest (Databricks Runtime 19 names both and runs JDK 21 only).
ON_PY313 = ("4.2.0@3.13", "4.3.0@3.13")
#: What those legs run: the contract (the driver's and the workers' Python, the JVM's Java,
#: the executors' compiled read), a realTime trigger's error, the demo (the CLI, a producer and a
#: stream), the notebooks (Delta, a running session) and the serverless shape (Spark
#: Connect, availableNow only). Not the drain with a kill, the doc snippets nor the
#: pipeline: Java 17 legs run those, and the whole matrix must stay lean.
PY313_TESTS = ("test_contract.py", "test_real_time.py", "test_demo_cli.py",
               "test_notebooks.py", "test_serverless_shape.py")
#: Run on those legs only (the Java 17 legs leave it out): the serverless shape starts a
#: Spark Connect server of its own with the notebooks' work, a few minutes a leg.
ONLY_ON_PY313 = ("test_serverless_shape.py",)
#: The Java of those legs: SPARK_QUEUE_SMOKE_JAVA makes test_contract.py check the JVM's.
PY313_JAVA = "21"
# delta-spark 4.4.0 accepts pyspark 4.0.1 to 4.2.0 (Maven Central serves its jars for each).
DELTA = {"4.0": "delta-spark==4.4.0", "4.1": "delta-spark==4.4.0", "4.2": "delta-spark==4.4.0"}
# Minors with declarative pipelines (pyspark.pipelines, `spark-pipelines`): their venvs get
# what its CLI needs, PyYAML beside Spark Connect's client (which every venv gets), so
# tests/smoke/test_pipelines.py runs there.
PIPELINES = {"4.1", "4.2", "4.3"}
# Versions that install the wheel with the spark extra, so pip checks the range against them.
WITH_SPARK_EXTRA = {"4.2"}
VENVS = ROOT / ".venv-matrix"
JOBS = int(os.environ.get("SPARK_QUEUE_MATRIX_JOBS", "2"))  # versions smoke-tested at once
SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed).*) in [\d.]+s", re.M)


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kwargs)


def build_wheel(python: str, out: pathlib.Path) -> pathlib.Path:
    run([python, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)])
    (wheel,) = out.glob("spark_queue-*.whl")
    # Files the wheel must carry beside the code: the types marker, Spark's lookup module
    # and the compiled Arrow reader for every machine type (hatch_build.py).
    from spark_queue.store.streams.columnar_builds import BUILDS

    readers = {f"spark_queue/store/streams/{build.file_name}" for build in BUILDS}
    with zipfile.ZipFile(wheel) as archive:
        missing = ({"spark_queue/py.typed", "pyspark_sqliteq.py", *readers}
                   - set(archive.namelist()))
        shipped_benchmarks = [n for n in archive.namelist() if n.startswith("benchmarks/")]
    if missing:
        raise SystemExit(f"matrix: {wheel.name} lacks {sorted(missing)}")
    if shipped_benchmarks:  # they run from a checkout; an install has no use for them
        raise SystemExit(f"matrix: {wheel.name} ships {shipped_benchmarks[:3]}")
    return wheel


def minor(version: str) -> str:
    """pyspark's minor of a matrix entry (``4.2.0`` or ``4.2.0@3.13``)."""
    return ".".join(version.split("@")[0].split(".")[:2])


def on_py313(version: str) -> bool:
    return version.endswith("@3.13")


def prepare_platform(version: str) -> pathlib.Path:
    """The venv of ``version`` with the platform in it (pyspark, Delta, pytest), no wheel."""
    home = VENVS / f"pyspark-{version.replace('@', '-py')}"
    python = home / "bin" / "python"
    if on_py313(version):
        python = trixie_python.create_venv(home)
    elif not python.exists():
        venv.create(home, with_pip=True)
        run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    version = version.split("@")[0]
    # pandas < 3: pyspark does not fully support pandas 3, which Connect's client pulls in.
    # Connect's client everywhere: tests/kit_examples runs each test on Classic and Connect.
    pyspark = f"pyspark[connect]=={version}"
    pipelines = ["pyyaml>=5.1"] if minor(version) in PIPELINES else []
    platform = [pyspark, "pandas>=2.2,<3", *pipelines,
                *filter(None, [DELTA.get(minor(version))])]
    run([str(python), "-m", "pip", "install", "--quiet", *platform,
         "pytest>=8", "pytest-timeout>=2.3"])
    return python


def install_wheel(version: str, python: pathlib.Path, wheel: pathlib.Path) -> None:
    package = f"{wheel}[spark]" if minor(version) in WITH_SPARK_EXTRA else str(wheel)
    run([str(python), "-m", "pip", "install", "--quiet", package])
    # Same version number as the last run's wheel: force the fresh build in.
    run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall",
         str(wheel)])


def smoke(version: str, python: pathlib.Path) -> tuple[bool, str, str]:
    env = dict(os.environ, SPARK_QUEUE_SMOKE_FROM_WHEEL="1",
               PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python))
    if on_py313(version):
        env["SPARK_QUEUE_SMOKE_PYTHON"] = "3.13"  # test_contract.py checks driver and workers
        env["SPARK_QUEUE_SMOKE_JAVA"] = PY313_JAVA  # and the JVM's Java
        env["JAVA_HOME"] = str(trixie_java.java_home())
    target = ROOT / "tests" / "smoke"
    # The test kit's example suite too (spark_queue.testing from the wheel, its plugin
    # through the wheel's pytest11 entry point), on Classic and on Connect.
    targets = ([str(target / name) for name in PY313_TESTS] if on_py313(version)
               else [str(target), *(f"--ignore={target / name}" for name in ONLY_ON_PY313),
                     str(ROOT / "tests" / "kit_examples")])
    with tempfile.TemporaryDirectory() as cwd:
        result = subprocess.run(
            [str(python.parent / "pytest"), *targets, "-q",
             "-p", "no:cacheprovider", f"--rootdir={ROOT}"],
            cwd=cwd, env=env, capture_output=True, text=True,
        )
    output = result.stdout + result.stderr
    found = SUMMARY.search(output)
    summary = found.group(1) if found else "no pytest summary"
    if result.returncode != 0 or not found or " passed" not in summary:
        return False, f"{summary} (exit {result.returncode})", output
    return True, summary, output


def run_order(versions: list[str]) -> list[str]:
    """One version with Delta first, then those without, then the other Delta ones: the
    first Delta session downloads the jars into Ivy's shared cache, which two sessions
    downloading the same jar at once could corrupt; later ones find them there."""
    delta = [v for v in versions if minor(v) in DELTA]
    plain = [v for v in versions if minor(v) not in DELTA]
    return delta[:1] + plain + delta[1:]


def main(argv: list[str]) -> int:
    default = ",".join((*VERSIONS, *ON_PY313))
    versions = os.environ.get("SPARK_QUEUE_MATRIX", default).split(",")
    if argv == ["--prepare"]:
        for version in versions:
            started = time.monotonic()
            prepare_platform(version)
            if on_py313(version):
                trixie_java.java_home()
            print(f"matrix: pyspark {version}: venv ready ({time.monotonic() - started:.0f} s)",
                  flush=True)
        return 0
    if any(map(on_py313, versions)):  # once, before two legs in threads would both fetch it
        trixie_java.java_home()
    with tempfile.TemporaryDirectory() as out:
        wheel = build_wheel(sys.executable, pathlib.Path(out))
        print(f"matrix: built {wheel.name}", flush=True)

        def one(version: str) -> bool:
            started = time.monotonic()
            python = prepare_platform(version)
            install_wheel(version, python, wheel)
            ok, summary, output = smoke(version, python)
            took = time.monotonic() - started
            with printing:
                if not ok:
                    sys.stdout.write(output[-20_000:])
                print(f"matrix: pyspark {version}: {summary} ({took:.0f} s with install)",
                      flush=True)
            return ok

        # A smoke run keeps the 2-core machine about two thirds busy (query starts,
        # JVM starts, waits on conditions): two at a time finish sooner than one by one.
        printing = threading.Lock()
        with ThreadPoolExecutor(max_workers=JOBS) as pool:
            order = run_order(versions)
            results = dict(zip(order, pool.map(one, order), strict=True))
    failed = [version for version, ok in results.items() if not ok]
    if failed:
        print(f"matrix: FAILED on pyspark {', '.join(failed)}")
        return 1
    print(f"matrix: the smoke suite passed on pyspark {', '.join(versions)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
