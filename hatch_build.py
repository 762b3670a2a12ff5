"""Build hook: compile csrc/arrow_columns.c, the SQLite extension the Spark source's
bulk read loads (spark_queue/store/streams/columnar.py), with the C compiler Python
was built with. It links no library: SQLite's routines come from the connection that
loads it. It needs SQLite's extension header, ``sqlite3ext.h``, from the system
(Debian's libsqlite3-dev; `make install` installs it where apt-get can); the header
is not copied into the project. An editable install compiles it into the checkout,
where the .pth of the install points; a wheel carries it.

Without a compiler or the header the build goes on without the extension, after a
warning: reads then build their columns in Python, as before (2-3x slower).

The wheel keeps its py3-none-any name (README, notebooks and Databricks paths name
it): the extension is an accelerator for the machine type it was built on, and
where it cannot load (another architecture or OS) the read builds its columns in
Python as before, after one warning (tests/store/streams/test_columnar_read.py).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sysconfig
import warnings

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = os.path.join("csrc", "arrow_columns.c")
TARGET = os.path.join("spark_queue", "store", "streams", "_arrow_columns.so")


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return  # the sdist carries the source
        if compile_extension(self.root) and version != "editable":
            build_data["force_include"][os.path.join(self.root, TARGET)] = TARGET


def compile_extension(root: str) -> bool:
    """Compile the extension; False (after a warning) where it cannot be built here."""
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    command = [
        *compiler, "-O2", "-fPIC", "-shared",
        os.path.join(root, SOURCE), "-o", os.path.join(root, TARGET),
    ]
    try:
        subprocess.run(command, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        warnings.warn(
            f"spark-queue: compiling {SOURCE} failed ({exc}); building without the compiled "
            "Arrow reader (reads fall back to Python). Install a C compiler and SQLite's "
            "header (Debian: apt-get install gcc libsqlite3-dev) and build again for it.",
            stacklevel=1,
        )
        return False
    return True
