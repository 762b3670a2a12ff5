"""What the sink tests share: read a topic or the ledger back, JSON input files, a stream
run to its end."""

from __future__ import annotations

import json
import os

from spark_queue.store import Store
from spark_queue.store.floor import sinks


def stored_events(path, topic):
    with Store(path) as store:
        return store.read(topic)


def ledger(path):
    with Store(path) as store:
        return sinks.list_ledger(store.conn)


def json_input(directory, batches):
    """A directory of JSON-lines files, one per future micro-batch (maxFilesPerTrigger=1), in
    ``directory``: the ``shared_dir`` fixture, which a cluster's executors see too."""
    src = directory / "in"
    src.mkdir()
    for i, rows in enumerate(batches):
        part = src / f"part-{i:03d}.json"
        part.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(part, (1_700_000_000 + i, 1_700_000_000 + i))  # the file source orders by mtime
    return str(src)


def run_stream(df, path, checkpoint, **options):
    writer = df.writeStream.format("sqliteq").option("path", path)
    for key, value in options.items():
        writer = writer.option(key, value)
    query = writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    try:
        query.awaitTermination()
    finally:
        query.stop()
    return query
