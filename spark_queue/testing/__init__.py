"""A test kit for streaming pipelines: :class:`StreamTest` and a pytest plugin.

``StreamTest(spark, transform)`` reads topics of a fresh store with ``format("sqliteq")``
in Kafka's schema, applies ``transform(df)``, writes the result to a sink it can read back
and checks the answer, through restarts and faults, on Spark Classic and Spark Connect.
docs/testing.md is its manual.

``import spark_queue.testing`` loads no pyspark (the pytest plugin imports it, and users
who only test with the store keep their runs cheap): each name loads its module when first
asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_queue.testing.stream_test import StreamTest

_LAZY = {"StreamTest": "spark_queue.testing.stream_test"}

__all__ = ["StreamTest"]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'spark_queue.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
