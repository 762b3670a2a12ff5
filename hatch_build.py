"""Build hook: compile csrc/arrow_columns.c, the SQLite extension the Spark source's
bulk read loads (spark_queue/store/streams/columnar.py), with the C compiler Python
was built with. It needs no library: SQLite's routines come from the connection that
loads it. A wheel with it is platform-specific; an editable install compiles it into
the checkout, where the .pth of the install points.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sysconfig

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = os.path.join("csrc", "arrow_columns.c")
TARGET = os.path.join("spark_queue", "store", "streams", "_arrow_columns.so")


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return  # the sdist carries the source
        compile_extension(self.root)
        build_data["pure_python"] = False
        # The extension uses no Python API: any CPython 3 on this platform can load it.
        platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        build_data["tag"] = f"py3-none-{platform}"
        if version != "editable":
            build_data["force_include"][os.path.join(self.root, TARGET)] = TARGET


def compile_extension(root: str) -> None:
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    command = [
        *compiler, "-O2", "-fPIC", "-shared", "-I", os.path.join(root, "csrc", "vendor"),
        os.path.join(root, SOURCE), "-o", os.path.join(root, TARGET),
    ]
    try:
        subprocess.run(command, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise RuntimeError(
            f"spark-queue: compiling {SOURCE} failed ({exc}); install a C compiler "
            "(gcc or clang) and build again."
        ) from exc
