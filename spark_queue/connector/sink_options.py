"""The sink's options: parsed and validated in one place, on the driver.

Stdlib only (plus :mod:`spark_queue.errors`), so it is unit-tested without
Spark. ``writer()``/``streamWriter()`` parse the options before any task
runs, so a bad option fails the query at start, never in an executor.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from spark_queue.errors import OptionError

FORMAT = "sqliteq"

#: Every option the sink reads, with the one-line meaning the README table shows.
SINK_OPTIONS: dict[str, str] = {
    "path": "the store file (required); created if missing",
    "topic": "publish every row to this topic (overrides a `topic` column)",
    "queue": "enqueue every row as a job in this queue (created with default settings if missing)",
    "sinkId": "the ledger name of this sink; default: the streaming query id",
    "batchId": "batch writes only, with `sinkId`: skip the write if this id is already committed",
    "durability": "`full`, `normal` (default) or `off`: SQLite `synchronous` for the commit",
    "busyTimeoutMs": "how long a commit waits for another writer's lock (default 30000)",
}

DURABILITY_LEVELS = ("full", "normal", "off")
DEFAULT_SINK_BUSY_TIMEOUT_MS = 30_000
# Same rule as spark_queue.store.names (kept here so this module stays stdlib-only).
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,200}")


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """The sink's options, validated. Picklable: writers carry it to executors and back."""

    path: str
    topic: str | None = None
    queue: str | None = None
    sink_id: str | None = None
    batch_id: int | None = None
    durability: str = "normal"
    busy_timeout_ms: int = DEFAULT_SINK_BUSY_TIMEOUT_MS

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SinkOptions:
        """Validate Spark's option map (keys case-insensitive) for a streaming or batch write."""
        opts = {str(k).lower(): v for k, v in options.items()}
        path = opts.get("path")
        if path is None or not str(path).strip():
            raise OptionError(
                f"{FORMAT} sink needs option 'path': the store file to write, e.g. "
                f".option('path', '/data/events.sqlite') or .save('/data/events.sqlite')."
            )
        topic = _name(opts, "topic")
        queue = _name(opts, "queue")
        if topic is not None and queue is not None:
            raise OptionError(
                f"{FORMAT} sink takes option 'topic' (publish) or 'queue' (enqueue), not both; "
                f"got topic={topic!r} and queue={queue!r}."
            )
        sink_id = _name(opts, "sinkid", "sinkId")
        batch_id = None
        if "batchid" in opts:
            if streaming:
                raise OptionError(
                    f"{FORMAT} option 'batchId' is for batch writes only; a streaming query "
                    "uses Spark's micro-batch ids. Remove it."
                )
            batch_id = _int(opts, "batchid", "batchId", low=0)
            if sink_id is None:
                raise OptionError(
                    f"{FORMAT} option 'batchId' needs option 'sinkId' too: the ledger skips a "
                    "batch id already committed under that sink name."
                )
        elif sink_id is not None and not streaming:
            raise OptionError(
                f"{FORMAT} option 'sinkId' in a batch write needs option 'batchId' too (the "
                "ledger skips a batch id already committed under that sink); remove 'sinkId' "
                "for a one-off write."
            )
        durability = str(opts.get("durability", "normal")).strip().lower()
        if durability not in DURABILITY_LEVELS:
            raise OptionError(
                f"{FORMAT} option 'durability' must be one of {', '.join(DURABILITY_LEVELS)}; "
                f"got {opts['durability']!r}."
            )
        busy = (
            _int(opts, "busytimeoutms", "busyTimeoutMs", low=0)
            if "busytimeoutms" in opts
            else DEFAULT_SINK_BUSY_TIMEOUT_MS
        )
        return cls(
            path=str(path),
            topic=topic,
            queue=queue,
            sink_id=sink_id,
            batch_id=batch_id,
            durability=durability,
            busy_timeout_ms=busy,
        )

    @property
    def target(self) -> str:
        """``"queue"`` when enqueueing, else ``"topic"`` (a fixed topic or a topic column)."""
        return "queue" if self.queue is not None else "topic"


def _name(opts: Mapping[str, str], key: str, label: str | None = None) -> str | None:
    value = opts.get(key)
    if value is None:
        return None
    if not _NAME.fullmatch(str(value)):
        raise OptionError(
            f"{FORMAT} option '{label or key}' must be 1 to 200 characters from letters, "
            f"digits, '_', '.' and '-'; got {value!r}."
        )
    return str(value)


def _int(opts: Mapping[str, str], key: str, label: str, *, low: int) -> int:
    raw = opts[key]
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = None
    if value is None or value < low:
        raise OptionError(f"{FORMAT} option '{label}' must be an integer >= {low}; got {raw!r}.")
    return value
