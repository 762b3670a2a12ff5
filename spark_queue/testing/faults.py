"""The faults a StreamTest makes on purpose, deterministically, in its own checkpoint.

A driver that dies after the sink committed a micro-batch but before Spark wrote the batch
to its commit log leaves exactly this on disk: ``offsets/N`` (the batch was planned), the
batch's rows in the sink, and no ``commits/N``. On the next start Spark runs batch N again
over the same offsets, and an exactly-once sink must skip it (the sqliteq sink's ledger,
the parquet sink's log, Delta's transaction ids). tests/end_to_end/test_sink_crash.py makes
the same state with SIGKILL in a subprocess; here it is made by removing the entry from a
stopped query's checkpoint, which leaves the same files without a kill.
"""

from __future__ import annotations

import os

from spark_queue.errors import StreamTestError
from spark_queue.testing.caught_up import last_commit


def forget_last_commit(checkpoint: str) -> int:
    """Remove the newest ``commits/N`` entry (and its checksum) of a STOPPED query's
    checkpoint, as a crash between the sink's commit and Spark's would; return N."""
    batch = last_commit(checkpoint)
    if batch is None:
        raise StreamTestError(
            "StreamTest.crash_between_commits: the query has committed no batch yet, so there "
            "is none to replay; add() rows first (the fault replays the batch that reads them).")
    commits = os.path.join(checkpoint, "commits")
    os.remove(os.path.join(commits, str(batch)))
    checksum = os.path.join(commits, f".{batch}.crc")
    if os.path.exists(checksum):
        os.remove(checksum)
    return batch
