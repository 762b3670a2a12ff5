"""OpenJDK 21 for the smoke matrix: Debian 13 (trixie)'s ``openjdk-21-jre-headless``, in
the root tests/smoke/trixie_python.py unpacks for Python 3.13, on a machine whose own
Debian 12 has no Java 21 (bookworm and its backports stop at 17).

Databricks Runtime 19 runs JDK 21 only; tests/smoke/matrix.py sets ``JAVA_HOME`` to the
folder :func:`java_home` returns for its ``@3.13`` legs, so Spark's ``spark-submit``, the
demo's and the notebooks' JVMs all run it. Three things make an unpacked package a JDK
that runs here:

- trixie's JVM needs trixie's glibc (2.38+; the machine has 2.36), so ``bin/java`` is a
  shell script that execs the real launcher (moved to ``bin/java.bin``) through the
  root's dynamic loader with the root's library folders, as the Python wrapper does;
  ``JAVA_HOME`` is found from ``libjli.so``'s path, so the JVM knows its home;
- the JVM starts child processes (Spark's Python workers) through ``lib/jspawnhelper``,
  which the kernel would run with the machine's glibc: the wrapper passes
  ``-Djdk.lang.Process.launchMechanism=FORK``, so the JVM forks and execs the child
  itself (its documented alternative on Linux), no helper involved;
- Debian's package links its configuration (``jvm.cfg``, ``java.security``, ...) to
  absolute ``/etc/java-21-openjdk/`` paths that maintainer scripts would install;
  they are re-pointed into the root. ``lib/security/cacerts`` (made by
  ``ca-certificates-java``'s script, which an unpack does not run) stays pointed at the
  machine's ``/etc/ssl/certs/java/cacerts``, which its Java 17 keeps: Ivy fetches
  Delta's jars over TLS with it.
"""

from __future__ import annotations

import pathlib

import trixie_python  # tests/smoke/, this script's folder

JDK = "usr/lib/jvm/java-21-openjdk-amd64"
WRAPPER = """#!/bin/sh
# trixie's java through trixie's loader (tests/smoke/trixie_java.py says why).
exec {loader} --library-path {library_path} --argv0 "$0" {java} \\
    -Djdk.lang.Process.launchMechanism=FORK "$@"
"""


def java_home() -> pathlib.Path:
    """The root's JDK 21 folder, made runnable on this machine (once; kept with the root)."""
    fs_root = trixie_python.root()
    home = fs_root / JDK
    launcher, real = home / "bin" / "java", home / "bin" / "java.bin"
    if not real.exists():
        _relink_into_root(fs_root, home)
        launcher.rename(real)
        launcher.write_text(WRAPPER.format(
            loader=fs_root / trixie_python.LOADER,
            library_path=":".join(str(fs_root / d) for d in trixie_python.LIBRARY_DIRS),
            java=real))
        launcher.chmod(0o755)
    return home


def _relink_into_root(fs_root: pathlib.Path, home: pathlib.Path) -> None:
    """Point the JDK's absolute links at the root's copy of their target, where it has one."""
    for link in home.rglob("*"):
        if not link.is_symlink():
            continue
        target = link.readlink()
        inside = fs_root / target.relative_to("/") if target.is_absolute() else None
        if inside is not None and inside.exists():
            link.unlink()
            link.symlink_to(inside)
