"""The demo's live progress line: what the bronze query did since the last line, in numbers it
can stand behind.

Before a query's first batch of this run its ``lastProgress`` is None, so Spark has not said
where it stands: a query restarted from a checkpoint is somewhere between 0 and the topic's
end, and a rate or lag computed against 0 would be false (a rerun once showed ``bronze
-14,800 rows/s``). Until that batch the line says the query is resuming from its checkpoint;
from then on rates count from where this run's first batch started (its ``startOffset``).
"""

from __future__ import annotations

import os
from typing import Any

from spark_queue.spark.query_progress import end_offset, start_offset


def has_checkpoint(checkpoint: str) -> bool:
    """Whether a query started on ``checkpoint`` resumes: Spark has logged a batch there."""
    offsets = os.path.join(checkpoint, "offsets")
    return os.path.isdir(offsets) and any(name.isdigit() for name in os.listdir(offsets))


class BronzeStatus:
    """Rows per second into the bronze table and its lag, one progress line at a time."""

    def __init__(self, topic: str, resuming: bool) -> None:
        self.topic = topic
        self.resuming = resuming
        self._last_end: int | None = None  # the end offset at the previous line

    def phase(self, progress: Any, producing: bool) -> str:
        if progress is None:
            return "resuming" if self.resuming else "waiting for batch 1"
        return "streaming" if producing else "catching up"

    def describe(self, progress: Any, query: Any, latest: int, span_s: float) -> str:
        """``progress``: ``query.lastProgress`` read BEFORE ``latest``, the topic's next offset
        (so the query cannot have read past ``latest`` and the lag is never negative)."""
        if progress is None:
            if self.resuming:
                return "bronze resuming from its checkpoint"
            return f"bronze waiting for its first batch, lag {latest:,}"
        end = end_offset(progress, self.topic)
        if self._last_end is None:  # this run's first batch started here
            self._last_end = start_offset(query.recentProgress[0], self.topic)
        rate = (end - self._last_end) / span_s
        self._last_end = end
        return f"bronze {rate:,.0f} rows/s, lag {latest - end:,}"
