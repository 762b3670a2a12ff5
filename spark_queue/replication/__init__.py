"""Replication: a store that outlives its machine (Litestream, the ``replicate`` extra).

- :func:`replicate` (``sqliteq replicate STORE --to URL``): ship the store to a replica
  until stopped, and keep its replicated high-water mark (docs/replication.md).
- :func:`restore` (``sqliteq restore STORE --from URL``): bring a missing store back.
- :func:`start_replication`: both, as one start step, the replicator in a background
  thread (the notebooks, the demo).

This package imports the store's public names only, never pyspark.
"""

from spark_queue.replication.replicator import (
    Replicating,
    Replicator,
    replicate,
    start_replication,
)
from spark_queue.replication.restoring import describe_restored, restore

__all__ = ["Replicating", "Replicator", "describe_restored", "replicate", "restore",
           "start_replication"]
