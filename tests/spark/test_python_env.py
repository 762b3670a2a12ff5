"""Spark's one environment map of the ``sqliteq`` source, and the guard that settles it
(spark_queue/spark/python_env.py; issue #58 point 13, "Illegal size 5 of collection,
expected 6").

The failure needs a task serialized on one thread while another query's start resizes the
map: a race these tests never run. They pin its two conditions instead, through py4j on the
session's JVM: every query of the JVM carries the SAME map, and a query's start writes it
(adds keys, or grows its table when the table is at its edge). Then that after
``spark_queue.register`` a start changes neither. The spark fixture finds the format by
Spark's lookup of ``pyspark_sqliteq`` (no register call): the path of the failure.
"""

from __future__ import annotations

import pytest

import spark_queue
from spark_queue.spark import python_env
from spark_queue.spark.python_env import RUNNER_KEYS, puts_can_resize, table_slots

PAD = "SQLITEQ_TEST_PAD_"


def shared_env(session):
    manager = session._jsparkSession.sessionState().dataSourceManager()
    return manager.lookupDataSource("sqliteq").dataSourceCls().envVars()


def shape(env) -> tuple[dict[str, str], int | None]:
    return dict(env), table_slots(env)


def threshold(env) -> int:
    slots = table_slots(env)
    assert slots is not None, "the Scala HashMap's table is out of reach on this pyspark"
    return int(slots * python_env.SCALA_LOAD_FACTOR)


def pad(env, until) -> None:
    """New keys until ``until(env)``; none of these puts grows the table (each is made
    below the edge)."""
    number = 0
    while not until(env):
        assert not puts_can_resize(env), "padding would grow the table itself"
        env.put(f"{PAD}{number}", "x")
        number += 1


def unpad(env) -> None:
    for key in [k for k in env.keySet() if k.startswith(PAD)]:
        env.remove(key)


def forget_runner_keys(env) -> None:
    """The map's keys as in a JVM where no query has started yet (its table stays)."""
    for key in RUNNER_KEYS:
        env.remove(key)


def start_and_finish(spark, path, checkpoint) -> None:
    query = (
        spark.readStream.format("sqliteq").option("path", path).option("topic", "t")
        .option("startingOffsets", "earliest").load()
        .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True).start()
    )
    try:
        assert query.awaitTermination(180), "availableNow query did not finish"
    finally:
        query.stop()


@pytest.fixture
def env(spark, store):
    store.publish_many("t", range(3))
    shared = shared_env(spark)
    try:
        yield shared
    finally:
        unpad(shared)


def test_every_lookup_and_every_session_share_one_environment_map(spark, env):
    jvm = spark._jvm
    others = [shared_env(spark), shared_env(spark.newSession())]
    assert {jvm.System.identityHashCode(e) for e in others} == {jvm.System.identityHashCode(env)}
    # The lookup's map is a Scala HashMap behind a Java wrapper, its table within reach.
    assert env.getClass().getName() == python_env.SCALA_WRAPPER
    assert table_slots(env) is not None


def test_a_stream_start_adds_keys_to_the_shared_map_and_grows_its_table_at_the_edge(
        spark, env, store_path, tmp_path):
    forget_runner_keys(env)
    start_and_finish(spark, store_path, tmp_path / "first")
    # The first start in a JVM: four keys more in the map every query's tasks carry.
    assert set(RUNNER_KEYS) <= set(env.keySet())
    # A map at its edge (a fresh JVM's after its first start: 5 entries, threshold 6):
    # the next start only updates keys, and still grows the table.
    pad(env, until=lambda e: e.size() + 1 >= threshold(e))
    keys, slots = set(env.keySet()), table_slots(env)
    start_and_finish(spark, store_path, tmp_path / "second")
    assert set(env.keySet()) == keys
    assert table_slots(env) == 2 * slots


def test_after_register_a_stream_start_changes_neither_keys_values_nor_table(
        spark, env, store_path, tmp_path):
    # The worst case the guard meets: no runner keys yet, and a table that the four puts
    # bring exactly to its edge (a fresh JVM's map: 1 entry, 8 slots, threshold 6).
    forget_runner_keys(env)
    pad(env, until=lambda e: e.size() + len(RUNNER_KEYS) + 1 >= threshold(e))
    spark_queue.register(spark)
    settled = shape(env)
    assert set(RUNNER_KEYS) <= set(settled[0]) and not puts_can_resize(env)
    start_and_finish(spark, store_path, tmp_path / "checkpoint")
    # The runner's values too: the guard put what the runner puts.
    assert shape(env) == settled
    assert python_env.settle_source_env(spark) and shape(env) == settled


def runner_puts(env, values) -> None:
    for key in RUNNER_KEYS:  # PythonStreamingSourceRunner.init(), key by key
        env.put(key, values[key])


def test_a_fresh_map_grows_at_the_second_start_unless_settled_first(spark):
    # Spark's own factory of the map the lookup builds (PythonUtils.createPythonFunction,
    # a method of the Scala object that py4j reaches through its MODULE$ instance).
    utils = getattr(getattr(spark._jvm.org.apache.spark.api.python, "PythonUtils$"), "MODULE$")

    def fresh():
        return utils.createPythonFunction(bytearray()).envVars()

    values = python_env.runner_values(spark._jsparkSession)
    bare = fresh()
    assert (bare.size(), table_slots(bare)) == (1, 8)
    runner_puts(bare, values)
    assert (bare.size(), table_slots(bare)) == (5, 8)
    runner_puts(bare, values)  # the second start: updates only, and the one resize
    assert (bare.size(), table_slots(bare)) == (5, 16)

    settled = fresh()
    assert python_env.settle_env(settled, lambda: values)
    assert (settled.size(), table_slots(settled)) == (5, 16)
    runner_puts(settled, values)
    runner_puts(settled, values)
    assert (settled.size(), table_slots(settled)) == (5, 16)


def test_a_registered_sources_java_map_gets_the_keys_and_is_never_resized(spark):
    env = spark._jvm.java.util.HashMap()
    env.put("PYTHONPATH", "p")
    values = python_env.runner_values(spark._jsparkSession)
    assert python_env.settle_env(env, lambda: values)
    assert dict(env) == {"PYTHONPATH": "p", **values}


class Refusing:
    """A JVM handle whose every call fails (py4j where the JVM refuses, another Spark)."""

    def __getattr__(self, name):
        raise RuntimeError(f"no {name} here")


class Holder:
    def __init__(self, jsession):
        self._jsparkSession = jsession


def test_the_guard_never_raises_and_does_nothing_where_it_cannot_reach():
    assert python_env.settle_source_env(object()) is False  # Spark Connect: no JVM handle
    assert python_env.settle_source_env(None) is False
    assert python_env.settle_source_env(Holder(Refusing())) is False


def test_the_guard_leaves_a_map_of_another_class_alone(spark):
    env = spark._jvm.java.util.TreeMap()
    assert python_env.settle_env(env, lambda: pytest.fail("values asked")) is False
    assert env.size() == 0
