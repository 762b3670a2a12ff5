"""The repair of a Spark checkpoint a power cut tore (spark_queue/checkpoint_repair.py).

The checkpoints here are written as Spark 4.2 writes them (offsets, commits, metadata, and
Hadoop's ``.crc`` files); tests/end_to_end/test_checkpoint_power_cut.py runs a real query.
"""

from __future__ import annotations

import json
import struct
import zlib

import pytest

from spark_queue.checkpoint_repair import (
    TORN_METADATA_MARK,
    diagnose,
    metadata_was_torn,
    repair_advice,
    repair_checkpoint,
)
from spark_queue.errors import CheckpointError
from tests.cli.cli_run import run

QUERY_ID = "89bd31fd-29fc-4248-9414-e48c22217529"


def _write(path, text: str) -> None:
    data = text.encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    sums = b"".join(struct.pack(">I", zlib.crc32(data[i:i + 512]))
                    for i in range(0, len(data), 512))
    path.with_name(f".{path.name}.crc").write_bytes(b"crc\0" + struct.pack(">i", 512) + sums)


def make_checkpoint(root, batches: int = 4, committed: int | None = None):
    _write(root / "metadata", json.dumps({"id": QUERY_ID}))
    conf = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {"a": "1"}})
    for batch in range(batches):
        _write(root / "offsets" / str(batch), f'v1\n{conf}\n{{"in":{(batch + 1) * 4}}}')
    for batch in range(batches if committed is None else committed):
        _write(root / "commits" / str(batch), 'v1\n{"nextBatchWatermarkMs":0}')
    return root


def _files(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_a_whole_checkpoint_is_left_as_it_is(tmp_path):
    root = make_checkpoint(tmp_path / "ckpt")
    before = _files(root)
    done = repair_checkpoint(root)
    assert not done.torn and done.removed == () and _files(root) == before
    assert "nothing to repair" in str(done)


@pytest.mark.parametrize(("torn", "committed"), [
    (["offsets/3"], 3), (["commits/3"], 4), (["offsets/3", "commits/3"], 4),
    (["commits/2", "commits/3"], 4), (["metadata"], 4), (["offsets/3", "metadata"], 3),
])
def test_the_empty_newest_files_and_their_checksums_are_removed_and_nothing_else(
    tmp_path, torn, committed
):
    root = make_checkpoint(tmp_path / "ckpt", committed=committed)
    for name in torn:
        (root / name).write_bytes(b"")
    before = _files(root)
    done = repair_checkpoint(root)
    crcs = [f"{name.rsplit('/', 1)[0]}/.{name.rsplit('/', 1)[1]}.crc" if "/" in name
            else f".{name}.crc" for name in torn]
    assert sorted(done.removed) == sorted(torn + crcs)
    # A removed metadata (the query's id) leaves its mark for the sink (issue #59).
    marked = {TORN_METADATA_MARK} if "metadata" in torn else set()
    assert set(_files(root)) == (set(before) - set(torn) - set(crcs)) | marked
    assert all(name in str(done) for name in torn)


def test_the_mark_of_a_lost_id_is_left_only_where_the_id_was_lost(tmp_path):
    root = make_checkpoint(tmp_path / "ckpt", committed=4)
    assert not metadata_was_torn(root)
    (root / "metadata").write_bytes(b"")
    assert repair_checkpoint(root, dry_run=True).torn and not metadata_was_torn(root)
    done = repair_checkpoint(root)
    assert metadata_was_torn(root) and "goes on under the ledger entry" in str(done)
    assert not repair_checkpoint(root).torn  # the mark is no torn file
    given = make_checkpoint(tmp_path / "given", committed=4)
    (given / "metadata").write_bytes(b"")
    repair_checkpoint(given, query_id="8f2c4b7e-1d3a-4e5f-9a6b-0c1d2e3f4a5b")
    assert not metadata_was_torn(given)  # the id is back: nothing was lost


@pytest.mark.parametrize("content", ["v1\n{\"batchWatermarkMs\":0,\"batch", "v1", "{}", "\0\0\0"])
def test_an_unparsable_or_cut_short_newest_offsets_entry_is_torn(tmp_path, content):
    root = make_checkpoint(tmp_path / "ckpt", committed=3)
    (root / "offsets" / "3").write_text(content)
    assert "offsets/3" in repair_checkpoint(root).removed


def test_a_newest_entry_that_parses_but_fails_its_checksum_is_torn(tmp_path):
    root = make_checkpoint(tmp_path / "ckpt", committed=3)
    # one source line where the entries before it hold one: a whole-looking file, other bytes
    text = (root / "offsets" / "3").read_text().replace('"in":16', '"in":99')
    (root / "offsets" / "3").write_text(text)
    assert "offsets/3" in repair_checkpoint(root).removed


@pytest.mark.parametrize(("damage", "says"), [
    ("offsets/1", "later entry"),  # a torn entry below a whole one
    ("gap", "gap"),
    ("state", "state/"),
    ("commit without offsets", "offsets of that batch"),
])
def test_what_a_power_cut_cannot_leave_is_refused_and_nothing_changes(tmp_path, damage, says):
    root = make_checkpoint(tmp_path / "ckpt", committed=4 if damage.startswith("commit") else 3)
    (root / "offsets" / "3").write_bytes(b"")  # a torn tail that would be repaired
    if damage == "offsets/1":
        (root / "offsets" / "1").write_bytes(b"")
    elif damage == "gap":
        (root / "offsets" / "2").unlink()
    elif damage == "state":
        (root / "state" / "0" / "0").mkdir(parents=True)
        (root / "state" / "0" / "0" / "4.delta").write_bytes(b"")
    before = _files(root)
    with pytest.raises(CheckpointError, match=says):
        repair_checkpoint(root)
    assert _files(root) == before


def test_a_torn_metadata_gets_the_query_id_back_when_given(tmp_path):
    root = make_checkpoint(tmp_path / "ckpt")
    (root / "metadata").write_bytes(b"")
    done = repair_checkpoint(root, query_id=QUERY_ID)
    assert json.loads((root / "metadata").read_text()) == {"id": QUERY_ID}
    assert done.rewritten == ("metadata",)
    with pytest.raises(CheckpointError, match="UUID"):
        repair_checkpoint(root, query_id="not-an-id")
    with pytest.raises(CheckpointError, match="whole"):
        repair_checkpoint(root, query_id=QUERY_ID)


def test_a_file_uri_is_a_local_checkpoint_and_another_scheme_is_refused(tmp_path):
    root = make_checkpoint(tmp_path / "ckpt")
    (root / "commits" / "3").write_bytes(b"")
    assert repair_checkpoint(f"file:{root}", dry_run=True).removed
    assert (root / "commits" / "3").exists()  # a dry run changes nothing
    assert repair_checkpoint(f"file://{root}").removed
    with pytest.raises(CheckpointError, match="local"):
        repair_checkpoint("dbfs:/tmp/ckpt")


def test_the_cli_says_what_it_removed_and_refuses_with_exit_1(tmp_path, capsys):
    root = make_checkpoint(tmp_path / "ckpt", committed=3)
    (root / "offsets" / "3").write_bytes(b"")
    code, out, _ = run(capsys, "checkpoint", "repair", str(root), "--dry-run")
    assert code == 0 and "would remove: offsets/3" in out
    code, out, _ = run(capsys, "checkpoint", "repair", str(root), "--json")
    assert code == 0 and "offsets/3" in json.loads(out)["removed"]
    code, out, _ = run(capsys, "checkpoint", "repair", str(root))
    assert code == 0 and out.strip().endswith("nothing to repair.")
    (root / "offsets" / "1").write_bytes(b"")
    code, out, err = run(capsys, "checkpoint", "repair", str(root), "--query-id", QUERY_ID)
    assert code == 1 and err.startswith("sqliteq checkpoint repair:") and out == ""


@pytest.mark.parametrize("torn", [["offsets/3", "commits/3"], ["commits/3"], ["metadata"]])
def test_the_diagnosis_names_the_torn_files_and_the_repair_command_and_changes_nothing(
    tmp_path, torn
):
    root = make_checkpoint(tmp_path / "a ckpt")  # a space: the command quotes the path
    for name in torn:
        (root / name).write_bytes(b"")
    before = _files(root)
    found = diagnose(root)
    assert found.torn and found.dry_run and _files(root) == before
    advice = repair_advice(found)
    assert f"sqliteq checkpoint repair '{root}'" in advice
    assert f"repair_checkpoint({str(root)!r})" in advice
    assert all(f"  {name}: it is empty (0 bytes)" in advice for name in torn)
    assert ("--query-id" in advice) == (torn == ["metadata"])


def test_the_diagnosis_of_a_whole_a_missing_and_an_unrepairable_checkpoint(tmp_path):
    assert not diagnose(make_checkpoint(tmp_path / "whole")).torn
    assert not diagnose(tmp_path / "not made yet").torn
    root = make_checkpoint(tmp_path / "ckpt")
    (root / "offsets" / "1").write_bytes(b"")
    with pytest.raises(CheckpointError, match="later entry"):
        diagnose(root)


def test_an_empty_state_file_a_kill_left_in_flight_is_no_torn_state(tmp_path):
    """A SIGKILL during a state store's write leaves its hidden ``.N.delta.<uuid>.tmp``
    empty; Spark never reads it (it writes there and renames), so it refuses nothing (the
    demo's kill-and-rerun test met one)."""
    root = make_checkpoint(tmp_path / "ckpt", committed=3)
    state = root / "state" / "0" / "1"
    state.mkdir(parents=True)
    (state / ".3.delta.4bafb229-c907-47bd-90b7-dfa591d95b12.TID14.tmp").write_bytes(b"")
    repair_checkpoint(root)  # no CheckpointError
    assert (state / ".3.delta.4bafb229-c907-47bd-90b7-dfa591d95b12.TID14.tmp").exists()
