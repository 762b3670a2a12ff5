"""Whether a query has processed its topics: its committed end offsets against the topics' ends.

"Processed" is a fact the source and the store both know, never a timer: each topic's
offset in the query's last committed batch (its progress report's ``endOffset``, read with
:mod:`spark_queue.spark.query_progress`; for a restarted query that has run no batch yet,
the checkpoint's last committed entry) equals the topic's end in the store.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spark_queue.spark.query_progress import offsets
from spark_queue.store import Store


@dataclass(frozen=True)
class Lag:
    """A topic the query has not caught up with: its committed offset and the topic's end."""

    topic: str
    committed: int
    end: int

    def __str__(self) -> str:
        return (f"topic {self.topic!r}: committed up to offset {self.committed}, the topic ends "
                f"at {self.end} ({self.end - self.committed} events behind)")


def topic_ends(store: Store, topics: Sequence[str]) -> dict[str, int]:
    """The next offset of each topic (0 for a topic nobody published to yet)."""
    known = {info.name: info.latest for info in store.topics()}
    return {topic: known.get(topic, 0) for topic in topics}


def ran_batch(progress: Any) -> bool:
    """Whether a progress report is of a micro-batch that ran (an idle trigger adds none)."""
    return bool(progress) and "addBatch" in (progress["durationMs"] or {})


def last_batch_progress(query: Any) -> Any:
    """The progress report of the last micro-batch ``query`` ran, or None."""
    last = query.lastProgress
    if ran_batch(last):
        return last
    return next((p for p in reversed(query.recentProgress) if ran_batch(p)), None)


def committed_offsets(query: Any, checkpoint: str) -> dict[str, int]:
    """Where ``query`` has committed its (one, sqliteq) source: its last batch's ``endOffset``,
    else the checkpoint's last committed entry (a restarted query that ran no batch yet)."""
    progress = last_batch_progress(query)
    if progress is not None:
        return offsets(progress["sources"][0]["endOffset"])
    return checkpoint_committed(checkpoint)


def checkpoint_committed(checkpoint: str) -> dict[str, int]:
    """The source offsets of the checkpoint's last batch with a commit-log entry ({} if none).
    An ``offsets/N`` file is the log's version line, the batch's metadata, then one line per
    source."""
    batch = last_commit(checkpoint)
    if batch is None:
        return {}
    with open(os.path.join(checkpoint, "offsets", str(batch)), encoding="utf-8") as entry:
        lines = entry.read().splitlines()
    return offsets(lines[2]) if len(lines) > 2 else {}


def last_commit(checkpoint: str) -> int | None:
    """The newest batch id of the checkpoint's commit log, or None before the first."""
    try:
        names = os.listdir(os.path.join(checkpoint, "commits"))
    except FileNotFoundError:
        return None
    batches = [int(name) for name in names if name.isdigit()]
    return max(batches) if batches else None


def lagging(store: Store, topics: Sequence[str], query: Any, checkpoint: str) -> list[Lag]:
    """The topics ``query`` has not processed to their end, or [] when it has processed all."""
    ends = topic_ends(store, topics)
    committed = committed_offsets(query, checkpoint)
    return [Lag(topic, committed.get(topic, 0), end) for topic, end in ends.items()
            if committed.get(topic, 0) < end]
