"""Python 3.13 for the smoke matrix, from Debian 13 (trixie)'s packages, on a machine
that has only its own Python (tests/smoke/matrix.py, versions ``4.2.0@3.13`` and ``4.3.0@3.13``).

The root is trixie's amd64 ``python3.13-minimal`` and ``libpython3.13-stdlib`` (and
``libstdc++6``, which pyarrow's and the compiled reader's wheels link), and
``openjdk-21-jre-headless`` (those legs' Java, tests/smoke/trixie_java.py) with their
dependencies, fetched by apt-get with a configuration of its own (the machine's dpkg and
apt state untouched) and unpacked with ``dpkg-deb -x`` (tests/smoke/debian_root.py, which
tests/store/streams/arm64_python.py builds its arm64 root with too). trixie's interpreter
needs trixie's glibc, newer than a bookworm machine's, so it runs through the root's own
dynamic loader with the root's library folders first (``ld-linux-x86-64.so.2 --library-path``); no
``LD_LIBRARY_PATH`` is set, so the JVM and other programs keep the machine's libraries.

The venv is made by hand around that: ``pyvenv.cfg`` pointing at the root, and
``bin/python`` a shell script that execs the loader with ``--argv0`` set to itself, so
``sys.executable`` is the script: pip's console scripts, ``subprocess`` calls of
``sys.executable`` and Spark's Python workers (``PYSPARK_PYTHON``) all run 3.13 through
it. pip goes in with the machine's pip (``pip --python``); from there the matrix
installs as in any venv.

Everything lives in ``.py313-root/`` of the checkout (gitignored), kept between runs and
remade when the package list changes.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import debian_root  # tests/smoke/, this script's folder

ROOT = pathlib.Path(__file__).resolve().parents[2]
CACHE = ROOT / ".py313-root"
SUITE = "trixie"
# A JRE is all Spark runs (no javac); the JDK package would add ~50 MB of tools.
DEBS = ("python3.13-minimal", "libpython3.13-stdlib", "libstdc++6", "openjdk-21-jre-headless")
LIBRARY_DIRS = ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu")
LOADER = "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
WRAPPER = """#!/bin/sh
exec {loader} --library-path {library_path} --argv0 "$0" {python} "$@"
"""


def create_venv(home: pathlib.Path) -> pathlib.Path:
    """A venv at ``home`` run by trixie's Python 3.13, with pip; returns its ``bin/python``.
    Sets the root up first when needed."""
    fs_root = root()
    python = home / "bin" / "python"
    if (home / "bin" / "pip").exists():  # pip goes in last: a venv with it is complete
        return python
    shutil.rmtree(home, ignore_errors=True)
    version = _version(fs_root)
    (home / "bin").mkdir(parents=True, exist_ok=True)
    (home / "lib" / "python3.13" / "site-packages").mkdir(parents=True, exist_ok=True)
    (home / "pyvenv.cfg").write_text(
        f"home = {fs_root / 'usr' / 'bin'}\ninclude-system-site-packages = false\n"
        f"version = {version}\n")
    python.write_text(WRAPPER.format(
        loader=fs_root / LOADER,
        library_path=":".join(str(fs_root / folder) for folder in LIBRARY_DIRS),
        python=fs_root / "usr" / "bin" / "python3.13"))
    python.chmod(0o755)
    for alias in ("python3", "python3.13"):
        (home / "bin" / alias).symlink_to("python")
    # The machine's pip installs pip into the venv, running under 3.13 itself (--python).
    debian_root.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                     "--quiet", "--disable-pip-version-check", "pip"])
    return python


def root() -> pathlib.Path:
    """The unpacked trixie root, fetched first when missing or its package list changed."""
    stamp = CACHE / "debs.json"
    fs_root = CACHE / "root"
    if not stamp.exists() or json.loads(stamp.read_text()) != list(DEBS):
        shutil.rmtree(CACHE, ignore_errors=True)
        _unpack_debs(fs_root)
        stamp.write_text(json.dumps(list(DEBS)))
    return fs_root


def _version(fs_root: pathlib.Path) -> str:
    loader = fs_root / LOADER
    library_path = ":".join(str(fs_root / folder) for folder in LIBRARY_DIRS)
    result = subprocess.run(
        [str(loader), "--library-path", library_path, str(fs_root / "usr/bin/python3.13"),
         "-c", "import platform; print(platform.python_version())"],
        capture_output=True, text=True, check=True)
    return result.stdout.strip()


def _unpack_debs(fs_root: pathlib.Path) -> None:
    if not debian_root.can_fetch():
        raise RuntimeError("Python 3.13's root needs Debian's apt-get and its archive keyring")
    debian_root.unpack_debs(CACHE, fs_root, arch="amd64", suite=SUITE, debs=DEBS)
