"""Build hook: compile csrc/arrow_columns.c, the SQLite extension the Spark source's
bulk read loads (spark_queue/store/streams/columnar.py), once for every machine type of
spark_queue/store/streams/columnar_builds.py (Linux x86-64 and aarch64, macOS arm64 and
x86-64), with Zig's C compiler from PyPI (``ziglang``, a build requirement), which
cross-compiles from any of them. It links no library: SQLite's routines come from the
connection that loads it, and the Linux builds ask for glibc 2.17 (manylinux2014's
floor) only. It needs SQLite's extension header, ``sqlite3ext.h``, from the system
(Debian's libsqlite3-dev; `make install` installs it where apt-get can); the header is
not copied into the project.

One wheel, tagged ``py3-none-any``, carries every build (why: columnar_builds.py); the
read loads the one of the machine it runs on. A wheel build that cannot compile every
build fails, naming what is missing, so a wheel that reads in Python on some cluster is
never made by accident; ``SPARK_QUEUE_ALLOW_PYTHON_READ=1`` builds one on purpose (a
machine without the header), and ``sqliteq doctor`` then says which read path runs
where. An editable install compiles into the checkout and only warns (the checkout's
tests then say what is missing).
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import warnings

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = os.path.join("csrc", "arrow_columns.c")
PACKAGE_DIR = os.path.join("spark_queue", "store", "streams")
ALLOW_PYTHON_READ = "SPARK_QUEUE_ALLOW_PYTHON_READ"
# Where SQLite's headers are looked for, after sysconfig's include directory.
HEADER_DIRS = ("/usr/include", "/usr/local/include", "/opt/homebrew/include",
               "/opt/homebrew/opt/sqlite/include", "/usr/local/opt/sqlite/include")


class BuildFailed(Exception):
    """Why the wheel cannot carry every build of the compiled reader."""


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return  # the sdist carries the source
        built, failures = compile_all(self.root)
        refuse_or_warn(failures, editable=version == "editable", environ=os.environ)
        if version != "editable":
            for name in built:
                path = os.path.join(PACKAGE_DIR, name)
                build_data["force_include"][os.path.join(self.root, path)] = path


def refuse_or_warn(failures: dict[str, str], *, editable: bool, environ) -> None:
    """A wheel missing a build fails (unless ALLOW_PYTHON_READ is 1); an editable
    install warns."""
    if not failures:
        return
    message = _failure_message(failures)
    if not editable and environ.get(ALLOW_PYTHON_READ) != "1":
        raise BuildFailed(message)
    warnings.warn(message, stacklevel=2)


def builds(root: str):
    """columnar_builds.BUILDS, loaded by path: the package is not importable while it builds."""
    return _columnar_builds(root).BUILDS


def _python_read_slower(root: str) -> str:
    """defaults.PYTHON_READ_SLOWER, loaded by path (defaults.py imports nothing)."""
    path = os.path.join(root, "spark_queue", "defaults.py")
    spec = importlib.util.spec_from_file_location("_spark_queue_defaults", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PYTHON_READ_SLOWER


def _columnar_builds(root: str):
    path = os.path.join(root, PACKAGE_DIR, "columnar_builds.py")
    spec = importlib.util.spec_from_file_location("_spark_queue_columnar_builds", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # NamedTuple needs its module while the class is built
    spec.loader.exec_module(module)
    return module


def compile_all(root: str) -> tuple[list[str], dict[str, str]]:
    """Compile every build next to columnar.py: (file names built, {tag: why not})."""
    targets = builds(root)
    headers = _sqlite_headers()
    if headers is None:
        why = ("SQLite's extension header sqlite3ext.h was not found (Debian: apt-get install "
               "libsqlite3-dev; macOS: brew install sqlite)")
        return [], {build.tag: why for build in targets}
    compilers = {build.tag: _zig(build.zig_target) for build in targets}
    if not _zig_available():
        # Without Zig only the machine building can be served, by Python's own compiler.
        host = sysconfig.get_config_var("CC") or "cc"
        compilers = {build.tag: shlex.split(host) for build in targets if _is_host(build)}
    failures = {build.tag: "no cross-compiler (pip install ziglang)" for build in targets
                if build.tag not in compilers}
    with tempfile.TemporaryDirectory() as include:
        # Only SQLite's two headers: the system's others (glibc's) must not reach the
        # builds for other OSes.
        for name in ("sqlite3ext.h", "sqlite3.h"):
            shutil.copy(os.path.join(headers, name), include)
        running = {}
        for build in targets:
            if build.tag in compilers:
                out = os.path.join(root, PACKAGE_DIR, build.file_name)
                command = [*compilers[build.tag], "-O2", "-g0", "-fPIC", "-shared", "-I",
                           include, os.path.join(root, SOURCE), "-o", out]
                running[build] = subprocess.Popen(command, stdout=subprocess.PIPE,
                                                  stderr=subprocess.STDOUT, text=True)
        for build, process in running.items():
            output = process.communicate()[0]
            if process.returncode != 0:
                failures[build.tag] = f"the compiler failed: {output.strip()[-500:]}"
    built = [build.file_name for build in targets if build.tag not in failures]
    return built, failures


def _zig(target: str) -> list[str]:
    return [sys.executable, "-m", "ziglang", "cc", "-target", target, "-s"]


def _zig_available() -> bool:
    return importlib.util.find_spec("ziglang") is not None


def _is_host(build) -> bool:
    import platform

    return sys.platform == build.system and platform.machine().lower() in build.machines


def _sqlite_headers() -> str | None:
    for directory in (sysconfig.get_paths().get("include"), *HEADER_DIRS):
        if directory and all(os.path.exists(os.path.join(directory, name))
                             for name in ("sqlite3ext.h", "sqlite3.h")):
            return directory
    return None


def _failure_message(failures: dict[str, str]) -> str:
    lines = "; ".join(f"{tag}: {why}" for tag, why in failures.items())
    slower = _python_read_slower(os.path.dirname(os.path.abspath(__file__)))
    return (
        f"spark-queue: the compiled Arrow reader ({SOURCE}) could not be built for "
        f"{', '.join(failures)} ({lines}). Reads on those machine types would build Arrow "
        f"in Python, {slower}. Fix the cause and build again, or set "
        f"{ALLOW_PYTHON_READ}=1 to build without them on purpose (`sqliteq doctor` then "
        "names the read path on each machine)."
    )
