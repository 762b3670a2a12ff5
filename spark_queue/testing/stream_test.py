"""StreamTest: a streaming query under test, driven by actions, checked against its sink.

Spark's own Scala ``StreamTest`` (``AddData``, ``CheckAnswer``, ``StopStream``...) over a
``MemoryStream`` that lives in the JVM, so Spark Connect cannot use it. This one reads a
durable store with ``format("sqliteq")`` in Kafka's schema, so the same test runs on
Classic and Connect, a restart from the checkpoint is real, and "processed" is read off the
offsets (spark_queue.testing.caught_up), never waited for with a timer.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from spark_queue.errors import OptionError, StreamTestError
from spark_queue.store import Store
from spark_queue.testing import answers, caught_up, faults
from spark_queue.testing.added_rows import records
from spark_queue.testing.sink_kinds import Sink, SinkColumns

#: How long one wait on the query lasts before the kit looks at the offsets again: a
#: bound on awaitTermination (which returns at once when the query stops or fails).
POLL_S = 0.05
OUTPUT_MODES = ("append", "update", "complete")


class StreamTest:
    """A streaming query from ``topics`` of a store through ``transform`` into ``sink``.

    ``transform(df) -> DataFrame`` gets the topics read with ``format("sqliteq")`` in
    Kafka's schema (``key``, ``value`` binary, ``topic``, ``partition``, ``offset``,
    ``timestamp``...), with ``options`` as reader options (``maxRowsPerTrigger``,
    ``startingOffsets``, ``mode``...). ``store`` is a :class:`~spark_queue.store.Store`
    (a fresh one in a temp directory by default, closed by :meth:`close`). The query starts
    at the first action that needs it, with a checkpoint in the test's temp directory.

    Every action returns the StreamTest, so they chain; use it as a context manager (or
    call :meth:`close`), which stops every query it started whatever happens.
    """

    def __init__(
        self,
        spark: Any,
        transform: Callable[[Any], Any],
        *,
        store: Store | None = None,
        topics: Sequence[str] | str = ("in",),
        sink: str = "topic",
        output_mode: str = "append",
        options: Mapping[str, Any] | None = None,
    ) -> None:
        if output_mode not in OUTPUT_MODES:
            raise OptionError(f"StreamTest: output_mode must be one of {', '.join(OUTPUT_MODES)}; "
                              f"got {output_mode!r}.")
        self.topics = (topics,) if isinstance(topics, str) else tuple(topics)
        if not self.topics:
            raise OptionError("StreamTest: topics must name at least one topic; got none.")
        self.spark, self.transform, self.output_mode = spark, transform, output_mode
        self.options = {key: str(value) for key, value in (options or {}).items()}
        self.workdir = tempfile.mkdtemp(prefix="streamtest-")
        self.checkpoint = f"{self.workdir}/checkpoint"
        self.sink = Sink.parse(sink, self.workdir)
        self._own_store = store is None
        self.store = store if store is not None else Store(f"{self.workdir}/store.sqlite")
        self.query: Any = None  # the running (or last) StreamingQuery
        self._queries: list[Any] = []
        self._columns: SinkColumns | None = None
        self._last_batch: tuple[int, int] | None = None  # (batch id, rows it wrote)

    # -- lifetime ---------------------------------------------------------------------------
    def __enter__(self) -> StreamTest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every query this test started, close its own store, remove its temp files."""
        try:
            for query in self._queries:
                if query.isActive:
                    query.stop()
        finally:
            if self._own_store:
                self.store.close()
            shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def sink_name(self) -> str:
        """The sink's topic or queue in :attr:`store` (the memory sink's table)."""
        return self.sink.name

    # -- actions ----------------------------------------------------------------------------
    def start(self) -> StreamTest:
        """Start the query (from the checkpoint, if an earlier one left it); no-op if running."""
        if self.query is not None and self.query.isActive:
            return self
        reader = self.spark.readStream.format("sqliteq").option("path", self.store.path)
        reader = reader.option("subscribe", ",".join(self.topics))
        for key, value in self.options.items():
            reader = reader.option(key, value)
        result = self.transform(reader.load())
        if self._columns is None:
            self._columns = {field.name: field.dataType.typeName()
                             for field in result.schema.fields}
        self.query = self.sink.start(result, self.store, self.checkpoint, self.output_mode)
        self._queries.append(self.query)
        return self

    def add(self, rows: Iterable[Any] | Any, topic: str | None = None) -> StreamTest:
        """Publish ``rows`` to ``topic`` (the first of ``topics`` by default) in one
        transaction: values (str, bytes), dicts (a JSON value), or ``(key, value)`` /
        ``(key, value, headers)`` tuples. One value, dict or tuple alone is one row."""
        topic = self.topics[0] if topic is None else topic
        if topic not in self.topics:
            raise OptionError(f"StreamTest.add: topic {topic!r} is not one the query reads "
                              f"({', '.join(self.topics)}); pass topics=(...) to StreamTest.")
        self.store.publish_many(topic, records(rows))
        return self

    def process_all(self, timeout: float = 60) -> StreamTest:
        """Wait until the query has processed everything published: each topic's committed
        end offset equals the topic's end (and the batches that follow with no data, which
        emit what a watermark closed, have run). Starts the query if it is not running.

        Fails after ``timeout`` seconds naming the lagging topic, both offsets and the query's
        last error; raises the query's own error if it fails."""
        self.start()
        query, deadline = self.query, time.monotonic() + timeout
        while True:
            if query.awaitTermination(POLL_S):  # stopped or failed: raises its error
                raise StreamTestError(self._stopped_message("process_all"))
            lag = caught_up.lagging(self.store, self.topics, query, self.checkpoint)
            if not lag:
                break
            if time.monotonic() > deadline:
                raise StreamTestError(self._timeout_message(lag, timeout))
        # The offsets are processed; what is left is the batch Spark runs with no new data
        # when a watermark moved (or none): processAllAvailable returns once it is done.
        query.processAllAvailable()
        self._note_last_batch()
        return self

    def check_answer(self, expected: Iterable[Any], ordered: bool = False) -> StreamTest:
        """Process everything, then check every row the sink holds against ``expected``
        (in ``complete`` output mode: the result table the last batch wrote)."""
        if self.query is None or self.query.isActive:
            self.process_all()
        actual = self.last_batch_rows() if self.output_mode == "complete" else self.rows()
        answers.compare(actual, list(expected), ordered=ordered,
                        what=f"StreamTest.check_answer ({self.sink.kind} sink)")
        return self

    def check_last_batch(self, expected: Iterable[Any]) -> StreamTest:
        """Process everything, then check the rows the last micro-batch wrote (any order)."""
        if self.query is None or self.query.isActive:
            self.process_all()
        answers.compare(self.last_batch_rows(), list(expected), ordered=False,
                        what=f"StreamTest.check_last_batch (batch {self._batch_id()})")
        return self

    def stop(self) -> StreamTest:
        """Stop the query (its checkpoint stays, for :meth:`restart`)."""
        if self.query is not None and self.query.isActive:
            self._note_last_batch()
            self.query.stop()
        return self

    def restart(self) -> StreamTest:
        """Stop the query, then start a new one from the same checkpoint."""
        return self.stop().start()

    def expect_failure(self, error_type: type[BaseException] = Exception,
                       match: str | None = None, timeout: float = 60) -> StreamTest:
        """Wait for the query to fail with ``error_type`` (pyspark's
        ``StreamingQueryException`` on Classic and Connect alike), whose message contains
        the regular expression ``match``. Fails if the query processes everything
        published without failing, stops, or fails otherwise."""
        self.start()
        query, deadline = self.query, time.monotonic() + timeout
        while True:
            try:
                stopped = query.awaitTermination(POLL_S)
            except error_type as exc:
                if match is not None and not re.search(match, str(exc)):
                    raise StreamTestError(
                        f"StreamTest.expect_failure: the query failed with "
                        f"{type(exc).__name__}, but its message does not match {match!r}:\n"
                        f"{exc}") from exc
                return self
            except Exception as exc:
                raise StreamTestError(
                    f"StreamTest.expect_failure: expected {error_type.__name__}, the query "
                    f"failed with {type(exc).__name__}: {exc}") from exc
            if stopped:
                raise StreamTestError(f"StreamTest.expect_failure: expected "
                                      f"{error_type.__name__}; the query stopped without one.")
            if not caught_up.lagging(self.store, self.topics, query, self.checkpoint):
                raise StreamTestError(
                    f"StreamTest.expect_failure: expected {error_type.__name__}; the query "
                    "processed everything published without failing.")
            if time.monotonic() > deadline:
                lag = caught_up.lagging(self.store, self.topics, query, self.checkpoint)
                raise StreamTestError(self._timeout_message(lag, timeout))

    def crash_between_commits(self, timeout: float = 60) -> StreamTest:
        """The fault exactly-once exists for: the next batch (what was added since the last
        one) is committed by the sink but not by Spark's commit log, then the query restarts.
        Spark runs that batch again on restart; the sink must skip it (check_answer then shows
        each row once). Deterministic: no kill, no timer (spark_queue.testing.faults)."""
        self.process_all(timeout)
        self.stop()
        faults.forget_last_commit(self.checkpoint)
        return self.start()

    # -- reading the sink ---------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        """Every row the sink holds, as dicts of the query's output columns (commit order
        for the topic, queue and memory sinks). Dates and timestamps come back as the sink
        stores them; ``check_*`` compare them with ``datetime`` values as ISO-8601 text."""
        return self.sink.rows(self.spark, self.store, self._output_columns())

    def last_batch_rows(self) -> list[dict[str, Any]]:
        """The rows the last micro-batch that ran wrote to the sink."""
        batch_id = self._batch_id()
        assert self._last_batch is not None
        return self.sink.last_batch(self.spark, self.store, self._output_columns(), batch_id,
                                    self._last_batch[1])

    # -- helpers ------------------------------------------------------------------------------
    def _output_columns(self) -> SinkColumns:
        if self._columns is None:
            self.start()
        assert self._columns is not None
        return self._columns

    def _note_last_batch(self) -> None:
        last = caught_up.last_batch_progress(self.query)
        if last is not None:
            sink = last["sink"]
            written = sink["numOutputRows"] if sink is not None else -1
            self._last_batch = (int(last["batchId"]), int(written))

    def _batch_id(self) -> int:
        if self._last_batch is None:
            raise StreamTestError("StreamTest.check_last_batch: no micro-batch has run yet; "
                                  "add() rows first.")
        return self._last_batch[0]

    def _stopped_message(self, action: str) -> str:
        return (f"StreamTest.{action}: the query is not running (stopped, or restart() it); "
                f"its last error: {self.query.exception()}")

    def _timeout_message(self, lag: list[caught_up.Lag], timeout_s: float) -> str:
        query = self.query
        behind = "; ".join(str(item) for item in lag) or "no topic behind"
        return (f"StreamTest: the query did not process what was published within {timeout_s} s: "
                f"{behind}. Its status: {query.status}; its last error: {query.exception()}.")
