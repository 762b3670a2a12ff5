"""The Spark connector, format ``sqliteq``: the data source Spark finds by that name.

Importing this package imports no pyspark by itself; the names below load
their modules on first use, so the options modules (stdlib only) can be
imported and tested without Spark.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {"SqliteQueueDataSource": "spark_queue.connector.datasource"}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
