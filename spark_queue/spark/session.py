"""A local SparkSession for the demo, the notebooks and scripts, built from ``conf/``.

Where a session already exists (Databricks, a notebook kernel, spark-submit)
it is used as it is. A session built here checkpoints through Hadoop's
FileSystem API (``FileSystemBasedCheckpointFileManager``: atomic rename on
local disks and HDFS, about 50 ms less per micro-batch than Spark's default, about
26 ms of it in publish-to-visible latency; BENCHMARKS.md "Latency"),
because its checkpoints live on the local disk; never use that manager for
checkpoints on an object store. Otherwise one is built from ``conf/spark-defaults.conf``
with ``conf/log4j2.properties`` for the driver's logging and, when asked,
Delta Lake through ``delta.configure_spark_with_delta_pip`` (Spark resolves
Delta's jars from Maven Central on the first start; to run offline, set
``spark.jars`` in the conf file to local copies of those jars and pass
``delta=False``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import pathlib
import sys
from collections.abc import Iterator, Mapping

from pyspark.sql import SparkSession

import spark_queue
from spark_queue.connector import compat
from spark_queue.errors import OptionError

log = logging.getLogger(__name__)

CONF_DIR_ENV = "SPARK_QUEUE_CONF_DIR"


def conf_dir() -> pathlib.Path:
    """``$SPARK_QUEUE_CONF_DIR``; else, in a checkout, its ``conf/`` (the copy users edit);
    else the defaults an installed wheel carries (``spark_queue/default_conf``)."""
    if os.environ.get(CONF_DIR_ENV):
        return pathlib.Path(os.environ[CONF_DIR_ENV])
    package = pathlib.Path(spark_queue.__file__).resolve().parent
    checkout = package.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "conf").is_dir():
        return checkout / "conf"
    return package / "default_conf"


def read_spark_defaults(path: pathlib.Path) -> dict[str, str]:
    """Parse Spark's ``key value`` conf format (comments with #, blank lines ignored)."""
    settings = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        if not value.strip():
            raise OptionError(
                f"{path}:{number}: Spark settings are lines of 'key value' (Spark's "
                f"spark-defaults.conf format); got {line!r}. Add the value, or remove the line."
            )
        settings[key] = value.strip()
    return settings


def ensure_python_workers() -> None:
    """Make Spark's Python workers run this interpreter, which has pyarrow and spark_queue."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@contextlib.contextmanager
def _jvm_output_to(log_path: str | os.PathLike[str] | None) -> Iterator[None]:
    """Start the JVM with its stdout and stderr on ``log_path`` (Ivy's jar download
    chatter, Spark's log, Python workers' stderr); this process keeps its own."""
    if log_path is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_path, "ab") as log_file:
        os.dup2(log_file.fileno(), 1)
        os.dup2(log_file.fileno(), 2)
    try:
        yield  # the JVM started now inherits the log file for good
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def get_or_create(
    app_name: str = "spark_queue",
    *,
    delta: bool | None = None,
    conf: Mapping[str, str] | None = None,
    jvm_log: str | os.PathLike[str] | None = None,
) -> SparkSession:
    """The active SparkSession, or a new local one configured from ``conf/``.

    ``delta``: True for Delta Lake (needs delta-spark), False without, None (the
    default) for Delta when delta-spark is installed. With ``jvm_log`` a new
    session's JVM writes its output to that file instead of this terminal. Either
    session goes through :func:`spark_queue.register`, which also settles the source's
    shared Python environment before any query starts (spark/python_env.py).
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        spark_queue.register(active)
        return active
    ensure_python_workers()
    if delta is None:
        delta = importlib.util.find_spec("delta") is not None
    settings: dict[str, str] = {}
    directory = conf_dir()
    defaults = directory / "spark-defaults.conf"
    if defaults.is_file():
        settings.update(read_spark_defaults(defaults))
    else:
        log.warning("no %s; starting Spark with its built-in defaults", defaults)
    log4j = directory / "log4j2.properties"
    if log4j.is_file():
        settings.setdefault(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}"
        )
    # Local checkpoints: the cheaper, still atomic file manager (see compat.py);
    # conf/spark-defaults.conf may name another.
    settings.setdefault(compat.CHECKPOINT_MANAGER_CONF, compat.FILE_SYSTEM_CHECKPOINT_MANAGER)
    if not delta:
        settings = {k: v for k, v in settings.items() if "delta" not in v.lower()
                    and "delta" not in k.lower()}
    settings.update(conf or {})
    builder = SparkSession.builder.appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    if delta:
        from delta import configure_spark_with_delta_pip

        builder = configure_spark_with_delta_pip(builder)
    with _jvm_output_to(jvm_log):
        session = builder.getOrCreate()
    spark_queue.register(session)
    return session


def table_format(spark: SparkSession) -> str:
    """``"delta"`` where ``spark`` can write Delta tables (Databricks, a session built with
    delta-spark), else ``"parquet"``: Spark's file sink, exactly once through its own log too."""
    try:
        # .schema: a Spark Connect session (serverless) resolves the reader only when asked;
        # a classic one already fails in load().
        _ = spark.read.format("delta").load(os.path.join(os.sep, "nonexistent", "spark_queue")) \
            .schema
    except Exception as exc:  # noqa: BLE001 - only the kind of failure matters here
        if "DATA_SOURCE_NOT_FOUND" in str(exc) or "Failed to find data source" in str(exc):
            return "parquet"
    return "delta"
