"""Where a notebook keeps its store and checkpoints (the driver's disk), and its tables
(storage every node sees); and the ``file:`` URI that keeps a path on the driver's disk
when Spark resolves it (docs/cluster.md#checkpoints)."""

from __future__ import annotations

import os
from typing import Any

DIR_ENV = "SPARK_QUEUE_NOTEBOOK_DIR"
TABLES_ENV = "SPARK_QUEUE_NOTEBOOK_TABLES_DIR"
# Storage every node of a Databricks cluster reaches through Spark's file API (not FUSE):
# executors write a table's files, so it cannot be the driver's local disk. A workspace
# on Unity Catalog sets the widget to a Volume (/Volumes/catalog/schema/volume/...).
DATABRICKS_TABLES_ROOT = "dbfs:/tmp/spark_queue"
# Databricks mounts the driver's local disk here; a live store must sit on a local disk.
DATABRICKS_LOCAL_DISK = "/local_disk0"


def driver_uri(path: str) -> str:
    """``path`` on this machine's disk as Spark must be given it: a ``file:`` URI.

    Spark resolves a path without a scheme against its default file system, which on
    Databricks is DBFS: a checkpoint given as ``/local_disk0/...`` lands there, away
    from the store it belongs with. ``file:/local_disk0/...`` stays on the driver's disk.
    The ``sqliteq`` format's ``path`` option takes this form too.
    """
    if path.startswith("file:"):
        return path
    return "file:" + os.path.abspath(path)


def store_table(tables: str, name: str, store_path: str) -> str:
    """Where the table ``name`` of the events of the store at ``store_path`` goes under
    ``tables``: ``NAME-<store id>``, one table per store file.

    A store created anew (after a cluster restart wiped the driver's disk) numbers its
    events from 0 again and starts with a new checkpoint; a table written from the old
    one would mix both stores' offsets (Delta) or skip the new query's first batches
    (Spark's file sink keeps the batch ids it committed beside the table). A table per
    store keeps each exact; a restored copy of the store keeps its id, and its table.
    """
    from spark_queue.store import Store, store_id

    with Store(store_path, create=False, readonly=True) as store:
        return f"{tables.rstrip('/')}/{name}-{store_id(store)}"


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


def tables_dir(name: str, dbutils: Any = None) -> str:
    """Where notebook ``name`` writes its tables: a directory (or URI) every node sees.

    Executors write a table's files, so on a multi-node cluster it cannot be the
    driver's local disk that :func:`work_dir` names. On Databricks it is the
    ``tables_dir`` widget, default ``dbfs:/tmp/spark_queue/NAME``; elsewhere
    ``$SPARK_QUEUE_NOTEBOOK_TABLES_DIR/NAME`` when that is set, else ``tables/`` in
    :func:`work_dir` (one machine: every executor sees it).
    """
    if os.environ.get(TABLES_ENV):
        default = os.path.join(os.environ[TABLES_ENV], name)
    elif os.path.isdir(DATABRICKS_LOCAL_DISK) and dbutils is not None:
        default = f"{DATABRICKS_TABLES_ROOT}/{name}"
    else:
        default = os.path.join(work_dir(name, dbutils), "tables")
    if dbutils is None:
        return default
    dbutils.widgets.text("tables_dir", default, "tables directory (every node sees it)")
    return dbutils.widgets.get("tables_dir") or default


REPLICA_ENV = "SPARK_QUEUE_REPLICA_URL"


def replicate_store(store_path: str, dbutils: Any = None) -> Any:
    """The start step of a notebook on a machine that may vanish (docs/replication.md).

    When a replica URL is configured (the ``replica_url`` widget on Databricks, else
    ``$SPARK_QUEUE_REPLICA_URL``): restore the store from it if the store is missing,
    then replicate it in the background while the notebook's process lives, and return
    the :class:`~spark_queue.replication.Replicating` handle; None when no URL is set.
    A cell run again in the same process gets the handle it started (one replicator per
    store: another process's is refused, naming it). Keep the checkpoints on storage that
    survives too (:func:`tables_dir`).
    """
    url = os.environ.get(REPLICA_ENV, "")
    if dbutils is not None:
        dbutils.widgets.text("replica_url", url,
                             "replica URL (s3://... or file:///...; empty: none)")
        url = dbutils.widgets.get("replica_url") or ""
    if not url:
        return None
    from spark_queue.replication import start_replication

    key = (os.path.abspath(store_path), url)
    running = _REPLICATING.get(key)
    if running is None or not running.running:
        running = _REPLICATING[key] = start_replication(store_path, url)
    return running


# The replicators this process's notebook cells started, by store and URL.
_REPLICATING: dict[tuple[str, str], Any] = {}
