"""Spark's one environment map for the ``sqliteq`` source, settled before queries start.

Why this exists (a Spark bug, not ours: SPARK-59233, apache/spark#58510): a Python data
source that Spark's lookup finds (the installed ``pyspark_sqliteq`` module) is built once
per JVM, and its ``PythonFunction`` carries ``envVars``, a Scala ``mutable.HashMap`` behind
a Java wrapper. Every streaming query's start (``PythonStreamingSourceRunner.init``, on that
query's thread) puts four keys into that SAME map, and every task of every such query
serializes it. The first start in a JVM adds the four keys (1 entry to 5, 8 slots); the
second start's first put grows the table to 16 slots, because Scala's ``put`` grows at
``size + 1 >= 0.75 * slots`` before it looks for the key. A task of another query
serialized at that moment fails with "Illegal size 5 of collection, expected 6". Once the
keys are in and the table has grown, a start only updates existing keys: nothing changes
size any more. :func:`settle_source_env` brings the map to that state while no query
runs, with the values the runner would put, so no later start changes the map's shape.

A source registered with ``spark.dataSource.register`` carries a ``java.util.HashMap``
(16 slots; updates never resize it): there only the keys are put. Everything here is
reached through the JVM handle of a classic session; on Spark Connect, on a Spark whose
classes differ, or where the JVM refuses a call, it does nothing. The test that pins the
whole story is tests/spark/test_python_env.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from spark_queue.defaults import FORMAT_NAME

log = logging.getLogger(__name__)

#: What PythonStreamingSourceRunner.init() puts (read in Spark's source; measured on 4.2.0).
RUNNER_KEYS = ("SPARK_LOCAL_DIRS", "SPARK_AUTH_SOCKET_TIMEOUT", "SPARK_BUFFER_SIZE",
               "SPARK_PYTHON_RUNTIME")
SCALA_WRAPPER = "scala.collection.convert.JavaCollectionWrappers$MutableMapWrapper"
SCALA_HASH_MAP = "scala.collection.mutable.HashMap"
JAVA_HASH_MAP = "java.util.HashMap"
#: Scala 2.13's HashMap keeps its table in this public (name-mangled) field.
SCALA_TABLE_FIELD = "scala$collection$mutable$HashMap$$table"
#: The load factor of a HashMap built without one (PythonUtils.createPythonFunction's).
SCALA_LOAD_FACTOR = 0.75


def settle_source_env(spark: Any, name: str = FORMAT_NAME) -> bool:
    """Put the keys each streaming query's start puts into the ``name`` data source's shared
    environment map, and grow its table now, so that no later start changes the map's size
    or its table while another query's task is serialized.

    True when the map is settled (now or before: a second call finds the keys and a grown
    table, and writes nothing), False when it cannot be reached (Spark Connect, no such
    source yet, a Spark whose classes differ, pyspark 4.3: ``compat.SETTLES_SOURCE_ENV``).
    Never raises. Call it before starting queries; spark_queue's own entry points do.
    """
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:  # Spark Connect: no JVM in this process
        return False
    try:
        from spark_queue.connector.compat import SETTLES_SOURCE_ENV

        if not SETTLES_SOURCE_ENV:  # pyspark 4.3: see compat.SETTLES_SOURCE_ENV
            return False
        manager = jsession.sessionState().dataSourceManager()
        if not manager.dataSourceExists(name):
            return False
        env = manager.lookupDataSource(name).dataSourceCls().envVars()
        return settle_env(env, lambda: runner_values(jsession))
    except Exception as exc:  # noqa: BLE001 - a guard must never fail the caller
        log.debug("sqliteq: could not settle the source's Python environment: %s", exc)
        return False


def settle_env(env: Any, values: Callable[[], Mapping[str, str]]) -> bool:
    """Bring one environment map (a JVM object) to the shape a query's start leaves it in:
    the runner's keys put where missing (``values()`` asked only then), and a Scala map's
    table grown until a put cannot grow it. False, and nothing written, for a map of
    another class."""
    kind = env.getClass().getName()
    if kind not in (SCALA_WRAPPER, JAVA_HASH_MAP):
        log.debug("sqliteq: the source's environment is a %s; left as it is", kind)
        return False
    missing = [key for key in RUNNER_KEYS if not env.containsKey(key)]
    if missing:
        given = values()
        for key in missing:
            env.put(key, given[key])
    if kind == SCALA_WRAPPER:
        grow_until_puts_cannot(env)
    return True


def runner_values(jsession: Any) -> dict[str, str]:
    """The values PythonStreamingSourceRunner.init() puts, computed as it computes them."""
    context = jsession.sparkContext()
    conf = context.conf()
    local_dirs = context.env().blockManager().diskBlockManager().localDirs()
    return {
        "SPARK_LOCAL_DIRS": ",".join(str(path.getPath()) for path in local_dirs),
        "SPARK_AUTH_SOCKET_TIMEOUT": str(
            conf.getTimeAsSeconds("spark.python.authenticate.socketTimeout", "15s")),
        "SPARK_BUFFER_SIZE": str(conf.getInt("spark.buffer.size", 65536)),
        "SPARK_PYTHON_RUNTIME": "PYTHON_WORKER",
    }


def table_slots(env: Any) -> int | None:
    """The length of the Scala HashMap's table behind ``env``; None where it cannot be read."""
    try:
        underlying = env.underlying()
        if underlying.getClass().getName() != SCALA_HASH_MAP:
            return None
        return len(underlying.getClass().getField(SCALA_TABLE_FIELD).get(underlying))
    except Exception:  # noqa: BLE001 - another Scala: the caller falls back
        return None


def puts_can_resize(env: Any) -> bool:
    """Whether the next put into ``env`` (even of a key it holds) would grow its table."""
    slots = table_slots(env)
    return slots is None or env.size() + 1 >= int(slots * SCALA_LOAD_FACTOR)


def grow_until_puts_cannot(env: Any) -> None:
    # An update of a key the map holds: Scala grows the table first when it is at the edge,
    # which is exactly the resize the next query's start would otherwise do. Where the
    # table cannot be read, one update still makes the one resize a fresh map is owed.
    key = RUNNER_KEYS[-1]
    if table_slots(env) is None:
        env.put(key, env.get(key))
        return
    for _ in range(4):  # each update doubles the table; one is all a fresh map needs
        if not puts_can_resize(env):
            return
        env.put(key, env.get(key))
