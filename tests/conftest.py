"""Fixtures shared by every test: fresh temp store paths, and the one Spark session.

The ``spark`` fixture serves tests/end_to_end, tests/spark and tests/smoke: UI off, 2 shuffle
partitions, Delta on when delta-spark is installed (the full suite's
environment; the version-matrix venvs have none). The master is local[2]
unless SPARK_QUEUE_TEST_MASTER names another. pyspark is imported inside the
fixture, so store-only runs never load it.
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

# The test kit's plugin (sqliteq_store, sqliteq_spark): the wheel registers it through its
# pytest11 entry point; a checkout installed before that entry point existed loads it here.
pytest_plugins = ["spark_queue.testing.plugin"]

# Spark's Python workers and the subprocesses tests start run this interpreter,
# which has pyarrow and spark_queue installed.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def spark_master() -> str:
    """The Spark master of this pytest run: local[2], or what SPARK_QUEUE_TEST_MASTER names
    (``standalone``: the cluster of tests/cluster/standalone.py, started for the run)."""
    return os.environ.get("SPARK_QUEUE_TEST_MASTER", "local[2]")


def master_kind() -> str:
    """``local[2]``, ``local-cluster`` or ``standalone``: what ``@pytest.mark.master`` names."""
    master = spark_master()
    if master == "standalone":
        return "standalone"
    return "local-cluster" if master.startswith("local-cluster") else "local[2]"


def pytest_collection_modifyitems(config, items):
    """Leave out tests marked for another master (``@pytest.mark.master``). A SIGKILL
    test costs one to four minutes; each runs once per CI run, under the master
    where it says the most (tests/end_to_end/test_local_cluster_suites.py runs the
    local-cluster ones in a child pytest)."""
    kind = master_kind()
    keep, left_out = [], []
    for item in items:
        marker = item.get_closest_marker("master")
        (left_out if marker is not None and marker.args[0] != kind else keep).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
    # The local-cluster children run in the background from the start of the session
    # (pytest_collection_finish below): the tests waiting for them go last.
    waiting = [item for item in keep if _runs_a_child(item)]
    items[:] = [item for item in keep if not _runs_a_child(item)] + waiting


def _runs_a_child(item) -> bool:
    return item.module.__name__.endswith("test_local_cluster_suites")


_BACKGROUND: list = []  # (the module that started them, its children)


def pytest_collection_finish(session):
    """Start the local-cluster children of the selected tests now, to run beside the rest
    of the suite (tests/end_to_end/test_local_cluster_suites.py); never inside a child."""
    if master_kind() != "local[2]" or session.config.option.collectonly:
        return
    items = [item for item in session.items if _runs_a_child(item)]
    if items:
        module = items[0].module  # the copy pytest imported, whose tests will wait
        _BACKGROUND.append((module, module.start_children([item.name for item in items])))


def pytest_sessionfinish(session, exitstatus):
    for module, children in _BACKGROUND:
        module.stop_children(children)


@pytest.fixture
def store_path(tmp_path):
    """A path for a new store file inside the test's own temp directory."""
    return str(tmp_path / "store.sqlite")


@pytest.fixture
def store(store_path):
    from spark_queue.store import Store

    with Store(store_path) as opened:
        yield opened


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """The standalone cluster whose workers cannot see this run's basetemp (every store the
    tests make lives there); its ``shared`` directory stands for cloud storage."""
    from tests.cluster.standalone import StandaloneCluster, unavailable

    if master_kind() != "standalone":
        pytest.skip("the standalone cluster runs under SPARK_QUEUE_TEST_MASTER=standalone "
                    "(tests/end_to_end/test_local_cluster_suites.py starts that run)")
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    basetemp = tmp_path_factory.getbasetemp()
    beside = basetemp.parent / f"{basetemp.name}-cluster"
    cluster = StandaloneCluster(hidden=basetemp, shared=beside / "shared", logs=beside / "logs")
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(beside, ignore_errors=True)


@pytest.fixture
def shared_dir(request, tmp_path):
    """A directory every node sees (cloud storage, for tables executors write): the
    cluster's shared directory under the standalone master, else one in the test's tmp."""
    if master_kind() == "standalone":
        cluster = request.getfixturevalue("standalone_cluster")
        path = cluster.shared / tmp_path.name
    else:
        path = tmp_path / "shared"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def spark(request):
    """With Delta where installed, as the notebooks and the demo use it; no register()
    call, so the format is found by Spark's lookup of the installed pyspark_sqliteq module."""
    from pyspark.sql import SparkSession

    from spark_queue.connector import compat

    try:
        from delta import configure_spark_with_delta_pip
    except ImportError:  # the version-matrix venvs (tests/smoke)
        configure_spark_with_delta_pip = None

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # tests/end_to_end/test_local_cluster_suites.py reruns the source and sink acceptance
    # suites with SPARK_QUEUE_TEST_MASTER=standalone, the SIGKILL tests with local-cluster.
    if master_kind() == "standalone":
        from tests.cluster.standalone import session_builder

        builder = session_builder(request.getfixturevalue("standalone_cluster"))
    else:
        builder = SparkSession.builder.master(spark_master())
    builder = (
        builder.config("spark.executor.memory", "1g")
        .appName("spark_queue-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        # As spark_queue's own sessions do (spark_queue/spark/session.py): local checkpoints.
        .config(compat.CHECKPOINT_MANAGER_CONF, compat.FILE_SYSTEM_CHECKPOINT_MANAGER)
    )
    if configure_spark_with_delta_pip is not None:
        builder = configure_spark_with_delta_pip(
            builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog",
                    "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            .config("spark.databricks.delta.snapshotPartitions", "2")
        )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.fixture(autouse=True)
def _no_leaked_queries(request):
    """Fail a test that leaves a streaming query running."""
    yield
    if "spark" in request.fixturenames:
        session = request.getfixturevalue("spark")
        active = session.streams.active
        for query in active:
            query.stop()
        assert not active, f"test left {len(active)} streaming queries running"
