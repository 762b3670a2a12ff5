"""On Databricks a path without a scheme is DBFS, and a cluster restart wipes the driver's
disk (the store and what lies beside it) but keeps DBFS. Stand-in: Hadoop's ViewFS as the
default file system, every path falling back to a local folder (``dbfs``), as a scheme-less
path falls to DBFS on a workspace; the driver's disk is another folder (``local_disk0``).

The three notebooks (cell by cell, tables on the stand-in as their ``tables_dir`` widget
names) and the demo run in ONE driver of their own: nothing that belongs beside a store
(a store, a checkpoint) lands on the stand-in, only tables. Then the restart: the driver's
folder is wiped, the stand-in kept, and a new driver runs them all again as the docs say
(a new store, a new checkpoint, a new table per store): every notebook's checks and the
demo's (every event in its table once) hold again.
"""

from __future__ import annotations

import os
import pathlib
import shutil

import pytest

from tests.end_to_end import drivers

pytestmark = pytest.mark.slow

REPO = pathlib.Path(__file__).resolve().parents[2]

DRIVER = """
import json, os, sys
sys.path.insert(0, {repo!r})
from spark_queue.demo.config import DemoConfig
from spark_queue.demo.run import run_demo
from spark_queue.spark import get_or_create
from tests.smoke.test_notebooks import NOTEBOOKS, run_cell_by_cell

local_disk, dbfs, log = sys.argv[1:4]
spark = get_or_create("dbfs stand-in", jvm_log=log, conf={{
    "spark.hadoop.fs.defaultFS": "viewfs://dbfs/",
    "spark.hadoop.fs.viewfs.mounttable.dbfs.linkFallback": "file://" + dbfs,
}})
# The stand-in stands: a path without a scheme lands in the fallback folder.
spark.range(1).write.mode("overwrite").parquet("/tables/probe")
assert os.path.isdir(os.path.join(dbfs, "tables", "probe")), os.listdir(dbfs)
os.chdir(local_disk)  # what a notebook or the demo leaves in its working directory is local
for notebook in NOTEBOOKS:
    run_cell_by_cell(notebook, spark, os.path.join(local_disk, notebook.stem),
                     "/tables/" + notebook.stem)
    assert not spark.streams.active, notebook.stem
summary = run_demo(DemoConfig(dir=os.path.join(local_disk, "demo"), events=2000,
                              events_per_second=2000, progress_seconds=60), out=lambda _: None)
print("RESULT " + json.dumps(summary, default=str), flush=True)
"""


def files_under(folder: pathlib.Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def checkpoints_and_stores(folder: pathlib.Path) -> list[str]:
    """What belongs beside a store: store files, and Spark checkpoints (a ``metadata`` file
    beside an ``offsets`` log)."""
    found = [str(p.relative_to(folder)) for p in folder.rglob("*.sqlite*")]
    found += [str(p.parent.relative_to(folder)) for p in folder.rglob("offsets")
              if (p.parent / "metadata").is_file()]
    return sorted(found)


def run_round(tmp_path: pathlib.Path, name: str, local_disk: pathlib.Path,
              dbfs: pathlib.Path) -> dict:
    local_disk.mkdir(exist_ok=True)
    script = drivers.write_script(tmp_path, DRIVER.format(repo=str(REPO)), f"{name}.py")
    result = drivers.run(script, local_disk, dbfs, tmp_path / f"{name}-spark.log",
                         timeout=1200).result()
    assert result["events_in_topic"] == result["rows_in_bronze"] == 2000, result
    assert result["distinct_offsets_in_bronze"] == 2000, result
    return result


@pytest.mark.timeout(2 * 1200 + 120)
def test_notebooks_and_demo_keep_their_driver_files_off_dbfs_and_rerun_after_a_restart(
    tmp_path,
):
    local_disk, dbfs = tmp_path / "local_disk0", tmp_path / "dbfs"
    dbfs.mkdir()
    run_round(tmp_path, "first", local_disk, dbfs)
    on_dbfs = files_under(dbfs)
    assert checkpoints_and_stores(dbfs) == [], on_dbfs
    assert {path.split(os.sep)[0] for path in on_dbfs} == {"tables"}, on_dbfs
    stores = checkpoints_and_stores(local_disk)
    for notebook in ("01_quickstart", "02_stream_to_delta", "03_spark_to_queue_worker", "demo"):
        assert any(path.startswith(notebook + os.sep) and ".sqlite" in path
                   for path in stores), (notebook, stores)
    assert any("checkpoints" in path and not path.endswith(".sqlite") for path in stores)

    shutil.rmtree(local_disk)  # the cluster restarts: the driver's disk is wiped, DBFS kept
    run_round(tmp_path, "second", local_disk, dbfs)
    assert checkpoints_and_stores(dbfs) == []
    tables = sorted(os.listdir(dbfs / "tables" / "01_quickstart"))
    assert len(tables) == 2 and all(t.startswith("orders-") for t in tables), tables
    kept = {path for path in on_dbfs if not path.startswith(os.path.join("tables", "probe"))}
    assert kept <= set(files_under(dbfs))  # DBFS kept every table file of the first run
