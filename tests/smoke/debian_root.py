"""A root of Debian packages for another interpreter, fetched without touching the
machine: what tests/smoke/trixie_python.py (amd64 trixie's Python 3.13) and
tests/store/streams/arm64_python.py (arm64 bookworm's Python 3.11) both stand on.

apt-get runs with a configuration of its own (its lists, status and .debs under the
caller's cache folder; the machine's dpkg and apt state untouched, no ``dpkg
--add-architecture``) and ``dpkg-deb -x`` unpacks each package, which is all an
interpreter needs (no maintainer scripts).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
from collections.abc import Sequence

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


def can_fetch() -> bool:
    """Whether this machine has what a fetch needs: Debian's apt-get and archive keyring."""
    return shutil.which("apt-get") is not None and os.path.exists(KEYRING)


def unpack_debs(cache: pathlib.Path, fs_root: pathlib.Path, *, arch: str, suite: str,
                debs: Sequence[str]) -> None:
    """Fetch ``debs`` of Debian ``suite`` for ``arch`` with their dependencies into
    ``cache / "apt"`` and unpack them all into ``fs_root``."""
    apt = cache / "apt"
    for folder in ("lists/partial", "archives/partial", "cache"):
        (apt / folder).mkdir(parents=True, exist_ok=True)
    (apt / "status").touch()
    (apt / "sources.list").write_text(
        f"deb [arch={arch} signed-by={KEYRING}] http://deb.debian.org/debian {suite} main\n")
    options = [
        "-o", f"APT::Architecture={arch}", "-o", f"APT::Architectures::={arch}",
        "-o", f"Dir::Etc::SourceList={apt / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=/nonexistent",
        "-o", f"Dir::State::Lists={apt / 'lists'}", "-o", f"Dir::State::status={apt / 'status'}",
        "-o", f"Dir::Cache={apt / 'cache'}", "-o", f"Dir::Cache::archives={apt / 'archives'}",
        "-o", "Debug::NoLocking=1", "-o", "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=0",
        "-o", "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=0",
    ]
    run(["apt-get", *options, "-qq", "update"])
    run(["apt-get", *options, "-qq", "-y", "--download-only", "--no-install-recommends",
         "install", *debs])
    fs_root.mkdir(parents=True, exist_ok=True)
    for deb in sorted((apt / "archives").glob("*.deb")):
        run(["dpkg-deb", "-x", str(deb), str(fs_root)])


def run(command: list[str], env: dict[str, str] | None = None) -> None:
    """Run ``command``; RuntimeError with the end of its stderr if it fails (no network, a
    package gone): a machine that has the tools fails loudly rather than skipping."""
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:5])} ... failed: {result.stderr.strip()[-800:]}")
