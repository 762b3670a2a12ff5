"""Keep a ``valueSchema=topic`` stream going across backward-compatible schema changes.

A Spark query's columns are fixed for its life, so a topic that gains a nullable field
cannot widen a running query. The source instead ends its last batch where the new
version starts and fails the next one with
:class:`~spark_queue.errors.SchemaChangedError` (docs/schemas.md, "Readers"); the query
started again from the same checkpoint takes the new columns at ``load()`` and reads the
first new event in them. :func:`follow_schema` is that restart, as Databricks Auto
Loader's ``addNewColumns`` mode is run under a job that restarts it: the caller's
``start`` builds the query (``load()`` anew, so the columns are read again) and the
supervisor starts it again on each backward-compatible change. Each batch is committed
once by Spark's checkpoint as any restart's would be; a sink that must take the new
column says so itself (Delta: ``mergeSchema``).

Only a change every newer version of which was set with ``compatibility='backward'`` is
followed; one set with ``'none'``, and any other failure, ends the supervision with
Spark's error as it is, for the caller to decide.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pyspark.sql.streaming.query import StreamingQuery

from spark_queue.errors import SchemaChange, SchemaChangedError

log = logging.getLogger(__name__)


def follow_schema(start: Callable[[], StreamingQuery]) -> SchemaFollow:
    """Start the query ``start()`` returns and start it again, from its checkpoint, each time
    it stops on a backward-compatible change of a topic's schema; return the handle.

    ``start`` must build the whole query on each call, ``spark.readStream ... .load()``
    through ``.start()``, with a ``checkpointLocation``: a DataFrame loaded once keeps the
    old columns and fails again (refused here, naming the versions). The first start runs
    in the caller's thread, so a bad option fails this call; the query is then watched on a
    background thread. Works with any trigger: under ``availableNow`` the handle ends when
    a run drains what it found, after however many restarts that took.
    """
    return SchemaFollow(start)


class SchemaFollow:
    """A supervised query: :attr:`query` is the one running now (another after each
    restart), :attr:`changes` the schema changes it restarted on, oldest first."""

    def __init__(self, start: Callable[[], StreamingQuery]) -> None:
        self._start = start
        # Held while a restart starts a query, so stop() never misses the new one.
        self._lock = threading.Lock()
        self._stopping = False
        self._error: BaseException | None = None
        self.changes: list[SchemaChange] = []
        self._query = start()
        self._watcher = threading.Thread(target=self._watch, name="sqliteq-follow-schema",
                                         daemon=True)
        self._watcher.start()

    @property
    def query(self) -> StreamingQuery:
        """The query running now (or the last one, once the handle has ended)."""
        return self._query

    @property
    def active(self) -> bool:
        """Whether the supervision goes on: a query runs, or is being started again."""
        return self._watcher.is_alive()

    @property
    def exception(self) -> BaseException | None:
        """The failure that ended the supervision, or None."""
        return self._error

    def await_termination(self, timeout_s: float | None = None) -> bool:
        """Wait until the supervision ends (stopped, an ``availableNow`` drain done, or a
        failure not followed); False if ``timeout_s`` passed first. A failure is raised as
        Spark raised it."""
        self._watcher.join(timeout_s)
        if self._watcher.is_alive():
            return False
        if self._error is not None:
            raise self._error
        return True

    def stop(self) -> None:
        """Stop the running query and the supervision; no restart follows."""
        with self._lock:
            self._stopping = True
            self._query.stop()
        self._watcher.join()

    def _watch(self) -> None:
        while True:
            try:
                self._query.awaitTermination()
                return  # stopped, or an availableNow run drained
            except Exception as exc:
                with self._lock:
                    if self._stopping:
                        return
                    if not self._restart(exc):
                        return

    def _restart(self, error: Exception) -> bool:
        """Start the query again after ``error`` when it is a followed schema change; False
        (the error kept for :meth:`await_termination`) otherwise. Caller holds the lock."""
        change = SchemaChangedError.change_in(str(error))
        if change is None or not change.backward:
            self._error = error
            return False
        if any(seen.topic == change.topic and seen.from_version == change.from_version
               for seen in self.changes):
            self._error = SchemaChangedError(
                f"follow_schema: the query started again still reads topic {change.topic!r} "
                f"with version {change.from_version}'s columns; its start callable must call "
                "load() anew on each call (a DataFrame loaded once keeps its columns).")
            self._error.__cause__ = error
            return False
        log.info("follow_schema: topic %r changed from schema version %d to %d (backward "
                 "compatible); starting the query again from its checkpoint", change.topic,
                 change.from_version, change.to_version)
        self.changes.append(change)
        try:
            self._query = self._start()
        except Exception as exc:
            self._error = exc
            return False
        return True
