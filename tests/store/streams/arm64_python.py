"""An aarch64 Python 3.11 run under emulation (qemu-user), set up from Debian's and PyPI's
packages, to prove the aarch64 build of the compiled reader loads and reads on the CPU of
a Graviton cluster (tests/store/streams/test_columnar_read_aarch64.py).

The root is Debian bookworm's arm64 ``python3.11-minimal`` and ``libpython3.11-stdlib``
with their dependencies, fetched by apt-get with a configuration of its own (the arm64
lists and the .debs in the cache folder; the machine's dpkg and apt state untouched, no
``dpkg --add-architecture``) and unpacked with ``dpkg-deb -x``, which is all an
interpreter needs (no maintainer scripts): tests/smoke/debian_root.py, shared with the
smoke matrix's Python 3.13. apsw, pyarrow and pytest go in beside it as
PyPI's aarch64 wheels, at the versions this interpreter has, with ``pip --target``.
``qemu-aarch64 -L ROOT`` runs it without binfmt (a container may not register it);
Debian's ``qemu-user`` is installed when missing, where apt-get can (root: CI).

Everything lives in ``.arm64-root/`` of the checkout (gitignored), kept between runs and
remade when the versions it was made for change.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import pathlib
import shutil
import sys

from tests.smoke import debian_root

ROOT = pathlib.Path(__file__).resolve().parents[3]
CACHE = ROOT / ".arm64-root"
SUITE = "bookworm"
DEBS = ("python3.11-minimal", "libpython3.11-stdlib", "libstdc++6")
WHEELS = ("apsw", "pyarrow", "pytest", "pytest-timeout")


class Unavailable(Exception):
    """Why emulation cannot be set up on this machine (the test skips, naming it)."""


def arm64_python() -> list[str]:
    """The command prefix that runs the emulated interpreter, with the wheels on its path
    (``[qemu-aarch64, -L, root, python3.11]``); sets the root up first when needed."""
    qemu = _qemu()
    versions = {name: importlib.metadata.version(name) for name in WHEELS}
    stamp = CACHE / "versions.json"
    fs_root = CACHE / "root"
    if not stamp.exists() or json.loads(stamp.read_text()) != versions:
        shutil.rmtree(CACHE, ignore_errors=True)
        _unpack_debs(fs_root)
        _install_wheels(CACHE / "site", versions)
        stamp.write_text(json.dumps(versions))
    return [qemu, "-L", str(fs_root), str(fs_root / "usr" / "bin" / "python3.11")]


def environment(*paths: str | os.PathLike) -> dict[str, str]:
    """The emulated interpreter's environment: the wheels, then ``paths``, on its path."""
    python_path = os.pathsep.join([str(CACHE / "site"), *map(str, paths)])
    return dict(os.environ, PYTHONPATH=python_path, PYTHONDONTWRITEBYTECODE="1")


def _qemu() -> str:
    found = shutil.which("qemu-aarch64")
    if found:
        return found
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise Unavailable("qemu-aarch64 is not installed (Debian: apt-get install qemu-user)")
    debian_root.run(["apt-get", "update", "-qq"])
    debian_root.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "qemu-user"],
                    env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    found = shutil.which("qemu-aarch64")
    if found is None:
        raise RuntimeError("apt-get installed qemu-user, but qemu-aarch64 is not on the PATH")
    return found


def _unpack_debs(fs_root: pathlib.Path) -> None:
    if not debian_root.can_fetch():
        raise Unavailable("needs Debian's apt-get and its archive keyring")
    debian_root.unpack_debs(CACHE, fs_root, arch="arm64", suite=SUITE, debs=DEBS)


def _install_wheels(site: pathlib.Path, versions: dict[str, str]) -> None:
    debian_root.run([
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--target", str(site), "--only-binary=:all:", "--python-version", "3.11",
        "--implementation", "cp", "--abi", "cp311",
        "--platform", "manylinux_2_28_aarch64", "--platform", "manylinux2014_aarch64",
        *(f"{name}=={version}" for name, version in versions.items())])
