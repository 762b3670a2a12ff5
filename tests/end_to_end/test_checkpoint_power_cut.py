"""A query into the sink whose checkpoint a power cut tore, repaired (issue 54).

A power cut leaves the checkpoint's newest files empty (Hadoop never fsyncs them;
measured with LazyFS). Here they are truncated to 0 bytes at 10 points of one
stream, in the shapes a cut leaves (the newest ``offsets`` and ``commits`` entries,
the commit alone, with or without their ``.crc``, once the ``metadata`` too). Without
the repair the query does not start (as Spark fails today); after
``repair_checkpoint`` it replays the batch it lost and every source row is in the
target exactly once: the sink's ledger skips the batch it already committed.

Each point publishes two full batches (``maxRowsPerTrigger`` rows each): a replanned
batch then covers the range it covered before the cut (docs/semantics.md#after-a-power-cut
says why that matters). One query run per point, availableNow. A batch cut short by the
end of the data is planned again as it was, from the end the source recorded for its start
(the last test: a query with a ``consumer``).
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from spark_queue.checkpoint_repair import repair_checkpoint
from spark_queue.store import Store
from tests.end_to_end.sink_helpers import run_stream, stored_events

pytestmark = pytest.mark.slow

ROWS_PER_BATCH = 3
POINTS = 10


def _newest(directory) -> str:
    return str(max(int(p.name) for p in directory.iterdir() if p.name.isdigit()))


def _tear(checkpoint, point: int) -> list[str]:
    """Truncate the newest files to 0 bytes, in the shape of cut number ``point``."""
    batch_offsets = _newest(checkpoint / "offsets")
    shapes = [
        [f"offsets/{batch_offsets}", f"commits/{batch_offsets}"],
        [f"commits/{batch_offsets}"],
        [f"offsets/{batch_offsets}", f"commits/{batch_offsets}",
         f"offsets/.{batch_offsets}.crc", f"commits/.{batch_offsets}.crc"],
    ]
    torn = shapes[point % len(shapes)]
    if point == POINTS - 1:
        torn = [*torn, "metadata", ".metadata.crc"]
    for name in torn:
        (checkpoint / name).write_bytes(b"")
    return torn


def test_a_torn_checkpoint_repaired_restarts_the_query_exactly_once(spark, tmp_path):
    source, target = str(tmp_path / "source.sqlite"), str(tmp_path / "target.sqlite")
    checkpoint = tmp_path / "ckpt"
    with Store(target) as store:
        store.topic("out").create()

    def run() -> str:
        rows = (spark.readStream.format("sqliteq").option("path", source).option("topic", "in")
                .option("maxRowsPerTrigger", ROWS_PER_BATCH).option("valueFormat", "string")
                .load().select("value"))
        return str(run_stream(rows, target, str(checkpoint), topic="out").id)

    published = 0
    query_id = None
    for point in range(POINTS):
        with Store(source) as store:
            store.publish_many("in", [{"i": published + j} for j in range(2 * ROWS_PER_BATCH)])
        published += 2 * ROWS_PER_BATCH
        query_id = run()
        _tear(checkpoint, point)
        if point == 0:
            with pytest.raises(Exception, match="Incomplete log file|end-of-input"):
                run()  # what Spark does without the repair
        done = repair_checkpoint(
            checkpoint, query_id=query_id if point == POINTS - 1 else None
        )
        assert done.torn and done.removed, str(done)
    assert run() == query_id  # the id the repair wrote back

    values = [json.loads(e.value)["i"] for e in stored_events(target, "out")]
    assert Counter(values) == Counter(range(published)), sorted(values)


def test_without_the_repair_the_run_s_error_names_the_command_that_lets_it_finish(
    spark, tmp_path, capsys
):
    from spark_queue.cli import main
    from spark_queue.errors import CheckpointTornError
    from spark_queue.spark import run_available_now

    source, target = str(tmp_path / "source.sqlite"), str(tmp_path / "target.sqlite")
    checkpoint = tmp_path / "ckpt"
    with Store(target) as store:
        store.topic("out").create()

    def writer():
        return (
            spark.readStream.format("sqliteq").option("path", source).option("topic", "in")
            .option("maxRowsPerTrigger", ROWS_PER_BATCH).option("valueFormat", "string")
            .load().select("value")
            .writeStream.format("sqliteq").option("path", target).option("topic", "out")
            .option("checkpointLocation", str(checkpoint))
        )

    published = 0
    # offsets/N and commits/N fail in the query's thread, metadata at start() (whose
    # error does not name the file: the checkpoint comes from the writer's option).
    for torn in (["offsets", "commits"], ["metadata"]):
        with Store(source) as store:
            store.publish_many("in", [{"i": published + j} for j in range(2 * ROWS_PER_BATCH)])
        published += 2 * ROWS_PER_BATCH
        query_id = str(run_available_now(writer()).query.id)
        names = [f"{log}/{_newest(checkpoint / log)}" for log in torn if log != "metadata"]
        names += ["metadata"] if "metadata" in torn else []
        for name in names:
            (checkpoint / name).write_bytes(b"")
        with pytest.raises(CheckpointTornError) as failed:
            run_available_now(writer())
        command = f"sqliteq checkpoint repair {checkpoint}"
        assert command in str(failed.value) and failed.value.torn == tuple(names)
        assert failed.value.__cause__ is not None  # Spark's own error
        extra = ["--query-id", query_id] if "metadata" in torn else []
        assert main([*command.split()[1:], *extra]) == 0, capsys.readouterr()
    assert str(run_available_now(writer()).query.id) == query_id

    values = [json.loads(e.value)["i"] for e in stored_events(target, "out")]
    assert Counter(values) == Counter(range(published)), sorted(values)


@pytest.mark.parametrize(("mode", "consumer", "torn"), [
    ("auto", "bronze", 1), ("low", "bronze", 1),  # the default reader and the simple one
    ("auto", None, 1),  # a query without a consumer name (the README's) records its plans too
    ("auto", None, 0),  # a torn offsets/0: Spark asks for a new start, under a new id
])
def test_a_short_batch_torn_after_its_sink_commit_replays_the_same_range(
    spark, tmp_path, mode, consumer, torn
):
    """Batch ``torn`` ends short of maxRowsPerTrigger (the end of the data), the sink commits
    it, a cut tears its offsets and commit files; more events arrive before the repaired
    query restarts. The source hands Spark the end it recorded for that batch's start, so
    the ledger skips exactly that batch and the events published since come in the next."""
    source, target = str(tmp_path / "source.sqlite"), str(tmp_path / "target.sqlite")
    checkpoint = tmp_path / "ckpt"
    with Store(target) as store:
        store.topic("out").create()

    def run() -> None:
        reading = spark.readStream.format("sqliteq").option("path", source)
        if consumer is not None:
            reading = reading.option("consumer", consumer)
        rows = (reading.option("topic", "in").option("maxRowsPerTrigger", 100)
                .option("latencyMode", mode)
                .option("valueFormat", "string").load().select("value"))
        run_stream(rows, target, str(checkpoint), topic="out")

    def publish(first: int, count: int) -> None:
        with Store(source) as store:
            store.publish_many("in", [{"i": i} for i in range(first, first + count)])

    publish(0, 3)
    run()  # batch 0: [0, 3)
    if torn == 1:
        publish(3, 3)
        run()  # batch 1: [3, 6), short of the limit, committed by the sink
    assert _newest(checkpoint / "offsets") == str(torn)
    for name in (f"offsets/{torn}", f"commits/{torn}"):
        (checkpoint / name).write_bytes(b"")  # as a cut leaves them
    published = 3 + 3 * torn
    publish(published, 4)
    assert repair_checkpoint(checkpoint).removed
    run()

    values = [json.loads(e.value)["i"] for e in stored_events(target, "out")]
    assert Counter(values) == Counter(range(published + 4)), sorted(values)
