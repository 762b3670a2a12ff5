"""The ledger entry a sink without sinkId writes under, per Spark checkpoint location
(spark_queue/store/file/sink_checkpoints.py; issue #59)."""

from __future__ import annotations

QUERY = "0b7c6a3e-5d2f-4c1b-8a9e-1f2d3c4b5a60"
NEW_ID = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"


def test_a_query_that_lost_its_id_goes_on_under_the_entry_recorded_for_its_checkpoint(
        store, tmp_path):
    ckpt = str(tmp_path / "ckpt")
    assert store.sink_for_checkpoint(ckpt, QUERY, id_lost=False) == QUERY
    assert store.sink_for_checkpoint(ckpt, QUERY, id_lost=False) == QUERY
    # The same checkpoint spelt as Spark may pass it: one location.
    assert store.sink_for_checkpoint(f"file:{ckpt}", NEW_ID, id_lost=True) == QUERY
    assert store.sink_for_checkpoint(f"file://{ckpt}/", NEW_ID, id_lost=True) == QUERY


def test_a_new_id_at_a_checkpoint_that_kept_its_id_is_a_new_sink(store, tmp_path):
    ckpt = str(tmp_path / "ckpt")
    store.sink_for_checkpoint(ckpt, QUERY, id_lost=False)
    assert store.sink_for_checkpoint(ckpt, NEW_ID, id_lost=False) == NEW_ID
    assert store.sink_for_checkpoint(ckpt, NEW_ID, id_lost=True) == NEW_ID  # moved


def test_a_lost_id_with_nothing_recorded_keeps_the_new_one(store, tmp_path):
    """A ledger an earlier release wrote, torn before a commit recorded it."""
    assert store.sink_for_checkpoint(str(tmp_path / "c"), NEW_ID, id_lost=True) == NEW_ID
