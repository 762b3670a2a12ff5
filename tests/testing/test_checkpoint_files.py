"""What the kit reads and changes in a checkpoint and a parquet sink's log, on files alone."""

from __future__ import annotations

import json

import pytest

from spark_queue.errors import OptionError, StreamTestError
from spark_queue.testing.caught_up import checkpoint_committed, last_commit
from spark_queue.testing.faults import forget_last_commit
from spark_queue.testing.sink_kinds import Sink, batch_files


def checkpoint(tmp_path, batches: int):
    root = tmp_path / "checkpoint"
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch in range(batches):
        (root / "offsets" / str(batch)).write_text(
            'v1\n{"batchWatermarkMs":0}\n' + json.dumps({"@store": "s", "in": 10 * (batch + 1)}))
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
        (root / "commits" / f".{batch}.crc").write_bytes(b"")
    return root


def test_the_committed_offsets_are_those_of_the_last_batch_in_the_commit_log(tmp_path):
    root = checkpoint(tmp_path, 3)
    assert last_commit(str(root)) == 2
    assert checkpoint_committed(str(root)) == {"in": 30}
    assert checkpoint_committed(str(tmp_path / "none")) == {}


def test_a_crash_between_commits_forgets_the_last_commit_and_nothing_else(tmp_path):
    root = checkpoint(tmp_path, 3)
    assert forget_last_commit(str(root)) == 2
    assert sorted(p.name for p in (root / "commits").iterdir()) == [".0.crc", ".1.crc", "0", "1"]
    assert sorted(p.name for p in (root / "offsets").iterdir()) == ["0", "1", "2"]
    assert checkpoint_committed(str(root)) == {"in": 20}


def test_a_crash_before_any_batch_says_to_add_rows_first(tmp_path):
    with pytest.raises(StreamTestError, match=r"add\(\) rows first"):
        forget_last_commit(str(checkpoint(tmp_path, 0)))


def test_a_parquet_batch_is_the_files_its_log_entry_adds(tmp_path):
    log = tmp_path / "_spark_metadata"
    log.mkdir()

    def entry(name, paths):
        (log / name).write_text("v1\n" + "\n".join(json.dumps({"path": p}) for p in paths))

    entry("0", ["a"])
    entry("1", ["b", "c"])
    entry("2.compact", ["a", "b", "c", "d"])
    assert batch_files(str(tmp_path), 1) == ["b", "c"]
    assert batch_files(str(tmp_path), 2) == ["d"]
    assert batch_files(str(tmp_path), 3) == []


def test_an_unknown_sink_is_refused_with_the_list(tmp_path):
    assert Sink.parse("queue:jobs", str(tmp_path)).name == "jobs"
    with pytest.raises(OptionError, match="topic, queue, memory, parquet, delta"):
        Sink.parse("kafka", str(tmp_path))
    with pytest.raises(OptionError):
        Sink.parse("parquet:x", str(tmp_path))
