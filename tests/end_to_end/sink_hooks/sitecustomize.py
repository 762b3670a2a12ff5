"""Test-only hook for tests/end_to_end/test_sink_crash.py, never shipped in the product.

The crash tests put this folder on the driver's PYTHONPATH; Spark passes that
path on to every Python worker it starts, and Python imports
``sitecustomize`` at start-up, so the sink's driver-side commit process gets
the hook without any switch in spark_queue itself. With
``SPARK_QUEUE_SINK_TEST_DIR`` set, every ``Store.commit_sink_batch`` (the
public call the sink commits through) appends its result to
``<dir>/commits.jsonl``; with ``SPARK_QUEUE_SINK_TEST_HOLD_BATCH`` too, the
commit of that batch id, once durable, touches ``<dir>/held-<id>`` and blocks
until the test SIGKILLs the driver: the window between the sink's commit and
Spark's commit log entry, held open.
"""

import os

TEST_DIR_ENV = "SPARK_QUEUE_SINK_TEST_DIR"
TEST_HOLD_BATCH_ENV = "SPARK_QUEUE_SINK_TEST_HOLD_BATCH"


def _install(directory: str) -> None:
    import json
    import time

    from spark_queue.store import Store

    commit = Store.commit_sink_batch

    def recorded_commit(self, *args, **kwargs):
        result = commit(self, *args, **kwargs)
        with open(os.path.join(directory, "commits.jsonl"), "a", encoding="utf-8") as log:
            log.write(json.dumps(result._asdict()) + "\n")
        hold = os.environ.get(TEST_HOLD_BATCH_ENV)
        if hold is not None and not result.skipped and result.batch_id == int(hold):
            with open(os.path.join(directory, f"held-{result.batch_id}"), "w") as marker:
                marker.write(str(os.getpid()))
            while True:  # the test SIGKILLs the driver now
                time.sleep(1)
        return result

    Store.commit_sink_batch = recorded_commit


if os.environ.get(TEST_DIR_ENV):
    _install(os.environ[TEST_DIR_ENV])
