"""Every machine type of columnar_builds.py gets its build of csrc/arrow_columns.c from
this one machine (hatch_build.py, Zig's cc), for the right CPU and OS, and each file is
the one the loader looks for there; a wheel that would miss one is refused by name."""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
import struct
import sys

import pytest

from spark_queue.store.streams import columnar_builds

ROOT = pathlib.Path(__file__).resolve().parents[3]
STREAMS = pathlib.Path("spark_queue") / "store" / "streams"
# What the file header says for each build: ELF e_machine, or Mach-O cputype.
HEADERS = {
    "manylinux_2_17_x86_64": (b"\x7fELF", 62),
    "manylinux_2_17_aarch64": (b"\x7fELF", 183),
    "macosx_11_0_arm64": (b"\xcf\xfa\xed\xfe", 0x0100000C),
    "macosx_10_13_x86_64": (b"\xcf\xfa\xed\xfe", 0x01000007),
}


def hatch_build():
    spec = importlib.util.spec_from_file_location("hatch_build", ROOT / "hatch_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def machine_of(path: pathlib.Path) -> tuple[bytes, int]:
    head = path.read_bytes()[:20]
    if head.startswith(b"\x7fELF"):
        return head[:4], struct.unpack_from("<H", head, 18)[0]
    return head[:4], struct.unpack_from("<I", head, 4)[0]


def test_every_build_compiles_here_for_its_own_cpu_and_os(tmp_path):
    (tmp_path / STREAMS).mkdir(parents=True)
    shutil.copytree(ROOT / "csrc", tmp_path / "csrc")
    shutil.copy(ROOT / STREAMS / "columnar_builds.py", tmp_path / STREAMS)
    built, failures = hatch_build().compile_all(str(tmp_path))
    assert failures == {}
    assert sorted(built) == sorted(b.file_name for b in columnar_builds.BUILDS)
    for build in columnar_builds.BUILDS:
        assert machine_of(tmp_path / STREAMS / build.file_name) == HEADERS[build.tag], build


def test_the_loader_picks_the_build_of_each_machine_type(monkeypatch):
    import platform

    for system, machine, tag in [("linux", "x86_64", "manylinux_2_17_x86_64"),
                                 ("linux", "aarch64", "manylinux_2_17_aarch64"),
                                 ("linux", "arm64", "manylinux_2_17_aarch64"),
                                 ("darwin", "arm64", "macosx_11_0_arm64"),
                                 ("darwin", "x86_64", "macosx_10_13_x86_64"),
                                 ("linux", "ppc64le", None), ("win32", "AMD64", None)]:
        monkeypatch.setattr(sys, "platform", system)
        monkeypatch.setattr(platform, "machine", lambda machine=machine: machine)
        build = columnar_builds.build_for_this_machine()
        assert (build.tag if build else None) == tag, (system, machine)


def test_a_wheel_missing_a_build_is_refused_naming_it_unless_asked_for():
    hook = hatch_build()
    failures = {"manylinux_2_17_aarch64": "the compiler failed: boom"}
    with pytest.raises(hook.BuildFailed, match="could not be built for manylinux_2_17_aarch64 "
                       r"\(manylinux_2_17_aarch64: the compiler failed: boom\).*"
                       "SPARK_QUEUE_ALLOW_PYTHON_READ=1"):
        hook.refuse_or_warn(failures, editable=False, environ={})
    with pytest.warns(UserWarning, match="manylinux_2_17_aarch64"):
        hook.refuse_or_warn(failures, editable=False,
                            environ={"SPARK_QUEUE_ALLOW_PYTHON_READ": "1"})
    with pytest.warns(UserWarning, match="manylinux_2_17_aarch64"):
        hook.refuse_or_warn(failures, editable=True, environ={})
    hook.refuse_or_warn({}, editable=False, environ={})  # all built: silent
