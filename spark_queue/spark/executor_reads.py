"""Which read path Spark's executors run: the compiled reader or Python's, and why.

A cluster's executors read the store's ranges where they can open the file
(the source option ``readPath``); a fallback there logs its one WARNING in the executor's
log, which nobody reads. :func:`read_paths` asks them from the driver, where the user is.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

from spark_queue.store import ReadPath

_FIELDS = "host STRING, compiled BOOLEAN, machine STRING, library STRING, reason STRING, " \
          "builds STRING"


def read_paths(spark: Any, tasks: int | None = None) -> dict[str, ReadPath]:
    """The read path of the Python workers of ``spark``'s executors, by host: one small
    job of ``tasks`` tasks (default: the session's default parallelism) that calls
    :func:`spark_queue.read_path` where each runs. Works on a classic session and a
    Spark Connect one. Hosts a job's tasks did not reach are absent: more tasks reach
    more executors."""
    if tasks is None:
        tasks = _default_parallelism(spark)
    rows = (spark.range(0, tasks, 1, tasks)
            .mapInArrow(_report, _FIELDS).distinct().collect())
    return {row["host"]: ReadPath(row["compiled"], row["machine"], row["library"],
                                  row["reason"], tuple(filter(None, row["builds"].split(","))))
            for row in rows}


def _default_parallelism(spark: Any) -> int:
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect has no SparkContext
        return 8


def _report(batches: Iterator[Any]) -> Iterator[Any]:
    """Runs in an executor's Python worker: this process's read path, once per task."""
    import pyarrow as pa

    from spark_queue.store import read_path

    for _ in batches:
        pass
    path = read_path()
    yield pa.RecordBatch.from_pylist([{
        "host": socket.gethostname(), "compiled": path.compiled, "machine": path.machine,
        "library": path.library, "reason": path.reason, "builds": ",".join(path.builds),
    }])
