"""The machine types the compiled Arrow reader (``csrc/arrow_columns.c``) is built for,
declared once: ``hatch_build.py`` compiles one library per row into every wheel (loading
this file by path, so it imports nothing but the standard library), and
``columnar.py`` loads the row of the machine it runs on.

One wheel carries them all, tagged ``py3-none-any``: the library is a SQLite extension
that links no Python and no SQLite (it calls SQLite through the loading connection's
routines), so it depends on the OS and the CPU only, and a few files of 10-50 KB
cost less than making a Databricks user pick a wheel per cluster type (x86-64 or
Graviton) in the path of a ``%pip install``. Each file is named after the platform
tag a wheel of that machine type would carry (cibuildwheel's and auditwheel's names),
so ``sqliteq doctor`` and a directory listing name the same thing.
"""

from __future__ import annotations

import platform
import sys
from typing import NamedTuple

PREFIX = "_arrow_columns."


class Build(NamedTuple):
    system: str  # sys.platform
    machines: tuple[str, ...]  # platform.machine() spellings of the CPU
    tag: str  # the wheel platform tag a native wheel of this machine type would carry
    zig_target: str  # `python -m ziglang cc -target` (glibc 2.17: manylinux2014's floor)
    suffix: str  # the shared-library suffix of the OS

    @property
    def file_name(self) -> str:
        return f"{PREFIX}{self.tag}{self.suffix}"


BUILDS = (
    Build("linux", ("x86_64", "amd64"), "manylinux_2_17_x86_64", "x86_64-linux-gnu.2.17", ".so"),
    Build("linux", ("aarch64", "arm64"), "manylinux_2_17_aarch64", "aarch64-linux-gnu.2.17",
          ".so"),
    Build("darwin", ("arm64", "aarch64"), "macosx_11_0_arm64", "aarch64-macos.11.0", ".dylib"),
    Build("darwin", ("x86_64",), "macosx_10_13_x86_64", "x86_64-macos.10.13", ".dylib"),
)


def machine_name() -> str:
    """This process's machine type as ``sqliteq doctor`` names it: ``linux-aarch64``."""
    return f"{sys.platform}-{platform.machine().lower()}"


def build_for_this_machine() -> Build | None:
    """The row this process can load, or None (another OS or CPU: the Python path)."""
    machine = platform.machine().lower()
    for build in BUILDS:
        if sys.platform == build.system and machine in build.machines:
            return build
    return None
