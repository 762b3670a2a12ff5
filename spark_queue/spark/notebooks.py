"""Where a notebook keeps its store and checkpoints."""

from __future__ import annotations

import os
from typing import Any

DIR_ENV = "SPARK_QUEUE_NOTEBOOK_DIR"
# Databricks mounts the driver's local disk here; a live store must sit on a local disk.
DATABRICKS_LOCAL_DISK = "/local_disk0"


def work_dir(name: str, dbutils: Any = None) -> str:
    """The directory notebook ``name`` keeps its store file and checkpoints in, created if needed.

    On Databricks (pass the notebook's ``dbutils``) it is the ``work_dir`` widget, which
    defaults to ``/local_disk0/spark_queue/NAME`` on the driver's local disk. Elsewhere it is
    ``$SPARK_QUEUE_NOTEBOOK_DIR/NAME`` when that is set, else ``./spark_queue_notebooks/NAME``.
    The same directory on every run, so a rerun resumes from the checkpoints there.
    """
    if os.environ.get(DIR_ENV):
        default = os.path.join(os.environ[DIR_ENV], name)
    elif os.path.isdir(DATABRICKS_LOCAL_DISK):
        default = os.path.join(DATABRICKS_LOCAL_DISK, "spark_queue", name)
    else:
        default = os.path.abspath(os.path.join("spark_queue_notebooks", name))
    path = default
    if dbutils is not None:
        dbutils.widgets.text("work_dir", default, "store and checkpoints directory")
        path = dbutils.widgets.get("work_dir") or default
    os.makedirs(path, exist_ok=True)
    return path
