"""The notebooks' start step, ``replicate_store``: a cell run again in the same process gets
the replicator it started, where a second replicator on the store is refused (issue 58,
point 4, met by a notebook user who reruns the cell)."""

from __future__ import annotations

from spark_queue.spark.notebooks import REPLICA_ENV, replicate_store
from spark_queue.store import Store


def test_a_rerun_cell_gets_the_replicator_it_started(tmp_path, monkeypatch):
    path = str(tmp_path / "nb.sqlite")
    monkeypatch.setenv(REPLICA_ENV, f"file://{tmp_path}/replica")
    first = replicate_store(path)
    try:
        assert first is not None and first.running and not first.restored
        assert replicate_store(path) is first
        with Store(path) as store:  # marked before the handle came back
            assert store.conn.execute("PRAGMA wal_autocheckpoint").fetchall()[0][0] == 0
    finally:
        first.stop()
    assert not first.running
    again = replicate_store(path)  # a stopped one is started anew
    try:
        assert again is not first and again.running
    finally:
        again.stop()
