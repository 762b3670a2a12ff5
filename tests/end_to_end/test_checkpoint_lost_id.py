"""A query into the sink (no ``sinkId``) whose WHOLE checkpoint a power cut truncated to 0
bytes, ``metadata`` included: what a cut before the kernel's first writeback leaves
(issue #59: repaired, the query came back under a new id and the sink wrote again what it
had committed, 2,500 of 20,000 rows at ``full``). The repair marks the lost id; the sink
goes on under the ledger entry the store recorded for the checkpoint's location, so
every source row is in the target exactly once, at 5 cuts of one stream whose runs write
at ``full`` and ``normal`` in turn, on a ledger an earlier release wrote (no record yet).

Each cut publishes two full batches (``maxRowsPerTrigger`` rows each) before its run: the
restarted query, starting over from the first event, plans the batches the sink committed
as they were planned, and the ledger skips exactly them (docs/semantics.md says when that
holds). One availableNow run per cut.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from spark_queue.checkpoint_repair import TORN_METADATA_MARK, repair_checkpoint
from spark_queue.errors import CheckpointTornError
from spark_queue.spark import raise_if_torn
from spark_queue.store import Store
from spark_queue.store.floor import sinks
from tests.end_to_end.sink_helpers import run_stream, stored_events

pytestmark = pytest.mark.slow

ROWS_PER_BATCH = 3
CUTS = 5


def truncate_everything(checkpoint) -> list[str]:
    """Every file of the checkpoint at 0 bytes, as a cut before any writeback leaves it."""
    torn = []
    for path in sorted(checkpoint.rglob("*")):
        if path.is_file():
            path.write_bytes(b"")
            torn.append(str(path.relative_to(checkpoint)))
    return torn


DURABILITIES = ("full", "normal")  # in turn, run after run: both meet every kind of cut


def test_a_checkpoint_truncated_whole_goes_on_exactly_once_under_its_ledger(spark, tmp_path):
    source, target = str(tmp_path / "source.sqlite"), str(tmp_path / "target.sqlite")
    checkpoint = tmp_path / "ckpt"
    with Store(target) as store:
        store.topic("out").create()

    runs = []

    def run():
        rows = (spark.readStream.format("sqliteq").option("path", source).option("topic", "in")
                .option("maxRowsPerTrigger", ROWS_PER_BATCH).option("valueFormat", "string")
                .load().select("value"))
        runs.append(1)
        return str(run_stream(rows, target, str(checkpoint), topic="out",
                              durability=DURABILITIES[len(runs) % 2]).id)

    def publish_two_batches(published):
        with Store(source) as store:
            store.publish_many("in", [{"i": published + j} for j in range(2 * ROWS_PER_BATCH)])
        return published + 2 * ROWS_PER_BATCH

    published = publish_two_batches(0)
    first_id = run()
    # What an earlier release left: a ledger under the query id and no record for the
    # checkpoint. The next commit (the checkpoint whole, the same id) records it.
    with Store(target) as store, store.write() as conn:
        conn.execute("DELETE FROM sq_meta WHERE key LIKE 'sink_checkpoint/%'")
    ids = []
    for cut in range(CUTS):
        published = publish_two_batches(published)
        ids.append(run())
        assert truncate_everything(checkpoint)
        if cut == 0:  # a plain start() fails with Spark's error; the helper names the fix
            with pytest.raises(Exception) as spark_error:
                run()
            with pytest.raises(CheckpointTornError, match="sqliteq checkpoint repair"):
                raise_if_torn(spark_error.value, str(checkpoint))
        done = repair_checkpoint(checkpoint)
        assert "metadata" in done.removed and (checkpoint / TORN_METADATA_MARK).exists()
    published = publish_two_batches(published)
    ids.append(run())

    assert len(set(ids)) == CUTS + 1 and first_id == ids[0]  # a new id after each cut
    values = [json.loads(e.value)["i"] for e in stored_events(target, "out")]
    assert Counter(values) == Counter(range(published)), sorted(values)
    with Store(target) as store:
        [entry] = sinks.list_ledger(store.conn)  # one sink all along, under its first id
    assert entry.sink_id == first_id and entry.rows == published


def test_a_checkpoint_deleted_and_made_anew_at_the_same_place_is_a_new_sink(spark, tmp_path):
    """No repair mark: a deliberate fresh start writes its rows again under a new entry."""
    import shutil

    source, target = str(tmp_path / "source.sqlite"), str(tmp_path / "target.sqlite")
    checkpoint = tmp_path / "ckpt"
    with Store(source) as store:
        store.publish_many("in", [{"i": i} for i in range(2 * ROWS_PER_BATCH)])
    with Store(target) as store:
        store.topic("out").create()
    rows = (spark.readStream.format("sqliteq").option("path", source).option("topic", "in")
            .option("maxRowsPerTrigger", ROWS_PER_BATCH).option("valueFormat", "string")
            .load().select("value"))
    first = run_stream(rows, target, str(checkpoint), topic="out").id
    shutil.rmtree(checkpoint)
    second = run_stream(rows, target, str(checkpoint), topic="out").id
    assert first != second
    assert len(stored_events(target, "out")) == 4 * ROWS_PER_BATCH
