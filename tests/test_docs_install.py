"""README "Install" and docs/spark-versions.md say what the packaging and the CI matrix do."""

from __future__ import annotations

import pathlib
import re
import tomllib

from tests.docs_pages import pages, section

ROOT = pathlib.Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSIONS_PAGE = "docs/spark-versions.md"


def matrix_versions() -> tuple[str, ...]:
    source = (ROOT / "tests" / "smoke" / "matrix.py").read_text(encoding="utf-8")
    return tuple(re.search(r"^VERSIONS = \((.*?)\)", source, re.M | re.S).group(1)
                 .replace('"', "").replace(" ", "").strip(",").split(","))


def test_no_doc_tells_users_to_install_from_an_index_we_are_not_on():
    docs = [ROOT / page for page in pages()]
    for path in [*docs, *sorted((ROOT / "notebooks").glob("*.py"))]:
        body = path.read_text(encoding="utf-8")
        assert not re.search(r"pip install\s+[\"']?spark-queue\b", body), path.name


def test_extras_take_a_pyspark_range_never_a_pin():
    extras = PYPROJECT["project"]["optional-dependencies"]
    for name in ("spark", "connect"):
        specs = [d for d in extras[name] if d.startswith("pyspark")]
        assert specs and all(">=4.0,<4.4" in d and "==" not in d for d in specs), specs
    assert "pyspark >=4.0,<4.4" in section("README.md", "## Install")


def test_the_version_table_names_the_versions_ci_runs():
    install = section(VERSIONS_PAGE, "## Spark versions")
    listed = ", ".join(matrix_versions()[:-1]) + " and " + matrix_versions()[-1]
    assert listed in " ".join(install.split()), listed
    header = next(line for line in install.splitlines() if line.startswith("| feature"))
    minors = sorted({v.rsplit(".", 1)[0] for v in matrix_versions()})
    assert [c.strip() for c in header.strip("|").split("|")[1:]] == minors


def test_the_python_page_names_the_python_313_and_java_21_runs():
    source = (ROOT / "tests" / "smoke" / "matrix.py").read_text(encoding="utf-8")
    runs = re.search(r"^ON_PY313 = \((.*?)\)", source, re.M).group(1).replace('"', "") \
        .replace(" ", "").strip(",").split(",")
    java = re.search(r'^PY313_JAVA = "(\d+)"', source, re.M).group(1)
    install = " ".join(section(VERSIONS_PAGE, "## Spark versions").split())
    assert len(runs) == 2, runs
    for run in runs:
        pyspark, python = run.split("@")
        assert f"Python {python}" in install and f"pyspark {pyspark}" in install, run
        assert f"`{run}`" in install, run
    assert f"OpenJDK {java}" in install and f"OpenJDK {java}" in section("README.md", "## Install")


def test_delta_pin_is_the_one_the_readme_names():
    delta = [d for d in PYPROJECT["project"]["optional-dependencies"]["delta"]
             if d.startswith("delta-spark")]
    assert delta == ["delta-spark==4.4.0"]
    assert "delta-spark 4.4.0" in section(VERSIONS_PAGE, "## Delta Lake")
    assert "delta-spark 4.4.0" in section("README.md", "## Install")


def test_the_databricks_section_matches_the_code():
    from spark_queue.spark.notebooks import DATABRICKS_LOCAL_DISK, DATABRICKS_TABLES_ROOT
    from spark_queue.store.file.filesystem import DATABRICKS_FUSE_MOUNTS

    databricks = section(VERSIONS_PAGE, "## On Databricks")
    for mount in DATABRICKS_FUSE_MOUNTS:
        assert f"`{mount}/...`" in databricks, mount
    assert f"`{DATABRICKS_LOCAL_DISK}`" in databricks
    # Multi-node clusters need no option: readPath=auto ships rows there (docs/cluster.md).
    for name in ("run_available_now", "`readPath=auto`", "(cluster.md)", "UnsafeFileSystemError",
                 "sqliteq backup", "spark_queue.register(spark)"):
        assert name in databricks, name
    notebook = (ROOT / "notebooks" / "01_quickstart.py").read_text(encoding="utf-8")
    for promise in ("/local_disk0/spark_queue/quickstart", "/dbfs/", "/Volumes/",
                    "replica_url", "docs/replication.md", "docs/cluster.md", "tables_dir",
                    f"{DATABRICKS_TABLES_ROOT}/quickstart", "%pip install"):
        assert promise in notebook, promise


def test_the_version_table_row_for_draining_names_the_helper_that_exists():
    from spark_queue.spark import run_available_now

    install = section(VERSIONS_PAGE, "## Spark versions")
    row = next(line for line in install.splitlines() if "run_available_now" in line)
    assert row.startswith(f"| `{run_available_now.__name__}(writer)`")
