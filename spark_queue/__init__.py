"""spark_queue: a durable stream-and-queue store in one SQLite file, with a Spark connector.

The front door names the user's nouns: ``from spark_queue import Store, Queue,
Producer, Record, NewJob, Worker, register``; ``read_path()`` says which read
this machine runs (the compiled one, or Python's and why). ``import spark_queue``
stays cheap: it loads no pyspark, no pyarrow and no worker; each name loads its
module when first asked for, and :func:`register` imports the connector only when
called.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_queue.store import NewJob, Producer, Queue, Record, Store, read_path
    from spark_queue.worker import Worker

from spark_queue.defaults import FORMAT_NAME

# The one place the version is written: pyproject.toml reads it ([tool.hatch.version]).
__version__ = "0.1.0"

# The names loaded on first use, and the module each comes from.
_LAZY = {
    "Store": "spark_queue.store",
    "Queue": "spark_queue.store",
    "Producer": "spark_queue.store",
    "Record": "spark_queue.store",
    "NewJob": "spark_queue.store",
    "Worker": "spark_queue.worker",
    "read_path": "spark_queue.store",
}

__all__ = ["FORMAT_NAME", "NewJob", "Producer", "Queue", "Record", "Store", "Worker",
           "__version__", "read_path", "register"]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # the next lookup finds it without this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def register(spark: Any) -> None:
    """Register the ``sqliteq`` data source with ``spark`` (needed where auto-discovery is off).

    Registers nothing where Spark already has the format (its lookup found the installed
    ``pyspark_sqliteq`` module, or an earlier call registered it), so it logs no
    "replaced a statically registered data source" warning. Either way it then settles
    the source's shared Python environment in the JVM, so queries started together do
    not fail in Spark's task serialization (``spark_queue.spark.settle_source_env``;
    never raises). Raises the import error when the connector cannot load on this pyspark.
    """
    from spark_queue.connector import SqliteQueueDataSource, compat
    from spark_queue.spark import python_env

    if not compat.data_source_exists(spark, FORMAT_NAME):
        try:
            spark.dataSource.register(SqliteQueueDataSource)
        except Exception as exc:
            if not _already_registered(exc):
                raise
    python_env.settle_source_env(spark)


def _already_registered(exc: Exception) -> bool:
    # pyspark 4.0: DATA_SOURCE_ALREADY_EXISTS for a name its lookup found (a Spark
    # Connect session, where the lookup cannot be asked first).
    return "DATA_SOURCE_ALREADY_EXISTS" in str(exc) or "already exists" in str(exc).lower()
