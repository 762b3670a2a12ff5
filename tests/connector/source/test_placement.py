"""readPath=auto's answer to "can executors open the driver's file?" (source/placement.py).

The planning process reads the master from the JVM that started it; these
tests hand it command lines as pyspark, spark-submit and other launchers
write them. A real standalone cluster whose workers cannot see the driver's
disk is in tests/cluster.
"""

from __future__ import annotations

import pytest

from spark_queue.connector.source import placement
from spark_queue.connector.source.placement import is_local_master, master_from

JAVA = ["/usr/bin/java", "-cp", "jars/*", "-Xmx1g"]
SUBMIT = [*JAVA, "org.apache.spark.deploy.SparkSubmit"]


@pytest.mark.parametrize("master, local", [
    ("local", True), ("local[2]", True), ("local[*]", True), ("local[4,2]", True),
    ("local-cluster[2,1,1024]", True), (" local[2] ", True),
    ("spark://127.0.0.1:7077", False), ("yarn", False), ("k8s://https://api:6443", False),
    ("sc://localhost", False), ("localhost", False), ("local[2]x", False), (None, False),
])
def test_only_local_masters_share_the_drivers_disk(master, local):
    assert is_local_master(master) is local


def test_pyspark_builder_master_is_read_from_its_conf_argument():
    argv = [*SUBMIT, "--conf", "spark.master=local[2]", "--conf", "spark.ui.enabled=false",
            "pyspark-shell"]
    assert master_from(argv, {}, {}) == "local[2]"


def test_the_master_flag_wins_over_conf_defaults_and_environment():
    argv = [*SUBMIT, "--conf", "spark.master=local[2]", "--master", "spark://h:7077", "app.py"]
    assert master_from(argv, {"MASTER": "local"}, {"spark.master": "local"}) == "spark://h:7077"
    assert master_from([*SUBMIT, "--master=yarn", "app.py"], {}, {}) == "yarn"
    assert master_from([*SUBMIT, "--conf=spark.master=yarn", "x"], {}, {}) == "yarn"


def test_spark_defaults_then_environment_then_spark_submits_default():
    assert master_from([*SUBMIT, "x.py"], {"MASTER": "yarn"}, {"spark.master": "spark://h:1"}) == (
        "spark://h:1")
    assert master_from([*SUBMIT, "x.py"], {"MASTER": "yarn"}, {}) == "yarn"
    assert master_from([*SUBMIT, "pyspark-shell"], {}, {}) == "local[*]"


def test_a_jvm_that_is_no_spark_submit_is_read_from_its_system_property_or_not_at_all():
    launcher = [*JAVA, "com.example.PlatformDriver"]
    assert master_from([*launcher[:2], "-Dspark.master=spark://10.0.0.1:7077", *launcher[2:]],
                       {}, {}) == "spark://10.0.0.1:7077"
    assert master_from(launcher, {"MASTER": "local"}, {"spark.master": "local"}) is None


def test_spark_defaults_conf_is_read_as_java_properties(tmp_path):
    conf = tmp_path / "spark-defaults.conf"
    conf.write_text("# spark.master local\nspark.ui.enabled false\nspark.master   spark://h:7077\n")
    assert placement.spark_defaults([*SUBMIT, "x"], {"SPARK_CONF_DIR": str(tmp_path)}) == {
        "spark.ui.enabled": "false", "spark.master": "spark://h:7077"}
    conf.write_text("spark.master=yarn\n")
    assert placement.spark_defaults(
        [*SUBMIT, "--properties-file", str(conf), "x"], {})["spark.master"] == "yarn"
    assert placement.spark_defaults([*SUBMIT, "x"], {"SPARK_CONF_DIR": str(tmp_path / "no")}) == {}


def test_a_process_with_no_jvm_above_it_ships_rows():
    """pytest is no Spark planner: no java ancestor, no master, so the safe answer."""
    placement.driver_master.cache_clear()
    try:
        assert placement.driver_master() is None
        assert placement.executors_share_driver_disk() is False
    finally:
        placement.driver_master.cache_clear()
