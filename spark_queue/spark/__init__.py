"""Helpers for Spark applications that use the store: a session, availableNow drains, progress.

This package imports pyspark (it sits above the connector, beside the demo);
``import spark_queue.spark`` itself loads nothing until a name is used.

- :func:`get_or_create`: the active SparkSession, or a local one from ``conf/``
  (Delta when asked, Spark's Python workers on this interpreter).
- :func:`table_format`: ``"delta"`` where the session writes Delta, else ``"parquet"``.
- :func:`work_dir`: a notebook's directory for its store and checkpoints (a widget on
  Databricks), the same on every run so a rerun resumes; :func:`tables_dir`: where its
  tables go, storage every node of a cluster sees; :func:`store_table`: one table per store
  file there; :func:`driver_uri`: the ``file:`` URI Spark must be given for what stays on
  the driver's disk (checkpoints beside the store, the store itself).
- :func:`run_available_now`: a ``Trigger.AvailableNow`` run that drains the
  backlog in bounded micro-batches on every supported Spark version.
- :func:`follow_schema`: a ``valueSchema=topic`` stream started again, from its checkpoint,
  at each backward-compatible change of its topic's schema, so it takes the new columns.
- :func:`raise_if_torn`: for a query started by hand, turn its failure on a checkpoint a
  power cut tore into an error naming the repair command (``run_available_now`` does).
- :func:`read_paths`: which read (compiled or Python, and why) the executors run.
- :func:`settle_source_env`: settle the ``sqliteq`` source's one Python environment map in
  the JVM before queries start, so queries started together do not fail in Spark's task
  serialization ("Illegal size 5 of collection, expected 6"); :func:`spark_queue.register`,
  :func:`get_or_create` and :func:`run_available_now` call it.
- :mod:`spark_queue.spark.query_progress`: source offsets out of ``StreamingQueryProgress``,
  the same on pyspark 4.0 to 4.3.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "get_or_create": "spark_queue.spark.session",
    "table_format": "spark_queue.spark.session",
    "work_dir": "spark_queue.spark.notebooks",
    "tables_dir": "spark_queue.spark.notebooks",
    "store_table": "spark_queue.spark.notebooks",
    "driver_uri": "spark_queue.spark.notebooks",
    "replicate_store": "spark_queue.spark.notebooks",
    "run_available_now": "spark_queue.spark.available_now",
    "AvailableNowRun": "spark_queue.spark.available_now",
    "follow_schema": "spark_queue.spark.schema_follow",
    "SchemaFollow": "spark_queue.spark.schema_follow",
    "raise_if_torn": "spark_queue.spark.torn_checkpoint",
    "read_paths": "spark_queue.spark.executor_reads",
    "settle_source_env": "spark_queue.spark.python_env",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
