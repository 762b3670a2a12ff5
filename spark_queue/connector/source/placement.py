"""Can executors open the driver's store file? ``readPath=auto`` asks here.

The planning process (a Python worker of the driver's JVM) has no SparkContext
and cannot see where executors run. What it can see is the JVM that started
it: the master that JVM was launched with, on its command line
(``--master``, ``--conf spark.master=``, ``-Dspark.master=``, as pyspark's
``SparkSession.builder.master(...)``, ``spark-submit`` and ``pyspark`` pass
it), in its ``MASTER`` environment variable or in ``spark-defaults.conf``, and
``spark-submit``'s own default (``local[*]``) when it names none. A ``local``
or ``local-cluster`` master runs every executor on the driver's machine, in
its mount namespace: executors open the file themselves (the fast path).
Every other master, or a JVM this cannot read (a platform's own launcher, as
on Databricks), may run executors on machines that cannot see the driver's
disk: the driver reads each range and ships it with the plan. So the
default is right on a cluster and merely slower where the answer is unknown.

One thing it cannot see: a master given to a SparkContext created after
another in the same JVM (``spark.stop()`` then a builder with another
master) is not on the command line. docs/cluster.md says to set ``readPath``
then; an executor that cannot open the file still fails with one line that
names the option (``partition_reader``).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence

SPARK_SUBMIT = "org.apache.spark.deploy.SparkSubmit"
#: spark-submit's master when none is given (SparkSubmitArguments).
SPARK_SUBMIT_DEFAULT_MASTER = "local[*]"
_LOCAL_MASTER = re.compile(r"local(\[[^\]]*\])?|local-cluster\[[^\]]*\]")
#: A Java properties line: the key ends at '=', ':' or whitespace.
_PROPERTY = re.compile(r"([^=:\s]+)\s*[=:\s]\s*(.*)")
#: Ancestors walked up from the planning process (pyspark's daemon sits between).
_MAX_ANCESTORS = 6


def executors_share_driver_disk() -> bool:
    """True when the driver's JVM runs a local or local-cluster master (cached per process)."""
    return is_local_master(driver_master())


def is_local_master(master: str | None) -> bool:
    return master is not None and _LOCAL_MASTER.fullmatch(master.strip()) is not None


@functools.lru_cache(maxsize=1)
def driver_master() -> str | None:
    """The master URL the driver's JVM was started with, or None where it cannot be read."""
    jvm = _driver_jvm()
    if jvm is None:
        return None
    argv, environ = jvm
    return master_from(argv, environ, spark_defaults(argv, environ))


def master_from(
    argv: Sequence[str], environ: Mapping[str, str], defaults: Mapping[str, str]
) -> str | None:
    """SparkSubmit's precedence: ``--master``, then ``--conf spark.master`` (over the
    properties file), then ``MASTER``, then ``local[*]``; other JVMs: ``-Dspark.master``."""
    system_property = None
    for arg in argv:
        if arg.startswith("-Dspark.master="):
            system_property = arg.split("=", 1)[1]
    if SPARK_SUBMIT not in argv:
        return system_property
    args = list(argv[argv.index(SPARK_SUBMIT) + 1:])
    flag_master = conf_master = None
    for index, arg in enumerate(args):
        value = args[index + 1] if index + 1 < len(args) else ""
        if arg == "--master":
            flag_master = value
        elif arg.startswith("--master="):
            flag_master = arg.split("=", 1)[1]
        elif arg in ("--conf", "-c") and value.startswith("spark.master="):
            conf_master = value.split("=", 1)[1]
        elif arg.startswith("--conf=spark.master="):
            conf_master = arg.split("=", 2)[2]
    return (flag_master or conf_master or defaults.get("spark.master")
            or environ.get("MASTER") or system_property or SPARK_SUBMIT_DEFAULT_MASTER)


def _driver_jvm() -> tuple[list[str], dict[str, str]] | None:
    pid = os.getppid()
    for _ in range(_MAX_ANCESTORS):
        if pid <= 1:
            return None
        argv = _read_nul_list(f"/proc/{pid}/cmdline")
        if argv and os.path.basename(argv[0]) == "java":
            environ = dict(
                item.split("=", 1) for item in _read_nul_list(f"/proc/{pid}/environ")
                if "=" in item
            )
            return argv, environ
        pid = _parent_of(pid)
    return None


def _read_nul_list(path: str) -> list[str]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _parent_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            # The command name may hold spaces and parentheses: fields follow the last ')'.
            fields = handle.read().rsplit(b")", 1)[1].split()
        return int(fields[1])
    except (OSError, IndexError, ValueError):
        return 0


def spark_defaults(argv: Sequence[str], environ: Mapping[str, str]) -> dict[str, str]:
    """``--properties-file``, else ``$SPARK_CONF_DIR/spark-defaults.conf`` (or SPARK_HOME's)."""
    path = None
    if "--properties-file" in argv:
        index = list(argv).index("--properties-file")
        path = argv[index + 1] if index + 1 < len(argv) else None
    if path is None:
        conf_dir = environ.get("SPARK_CONF_DIR") or (
            os.path.join(environ["SPARK_HOME"], "conf") if "SPARK_HOME" in environ else None)
        path = os.path.join(conf_dir, "spark-defaults.conf") if conf_dir else None
    properties: dict[str, str] = {}
    if path is None:
        return properties
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                match = _PROPERTY.match(line.strip())
                if match and not match.group(1).startswith(("#", "!")):
                    properties[match.group(1)] = match.group(2).strip()
    except OSError:
        pass
    return properties
