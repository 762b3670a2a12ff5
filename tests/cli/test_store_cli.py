"""The sqliteq CLI over the store: output for people and scripts, one error boundary."""

from __future__ import annotations

import io
import json
import os
import re

import pytest

from spark_queue.store import Store
from tests.cli.cli_run import existing, run
from tests.store.file.test_open import file_digest, make_foreign_sqlite


def test_init_publish_topics_tail_round_trip(capsys, store_path):
    assert run(capsys, "init", store_path)[0] == 0
    assert run(capsys, "topic", "create", store_path, "t")[0] == 0
    code, out, _ = run(capsys, "publish", store_path, "t", '{"a": 1}', "--value-format", "json",
                       "--key", "k", "--header", "h=v", "--json")
    assert code == 0 and json.loads(out) == {"topic": "t", "offset": 0}
    run(capsys, "publish", store_path, "t", "plain")
    code, out, _ = run(capsys, "topics", store_path, "--json")
    assert json.loads(out)[0] | {"name": "t"} == json.loads(out)[0]
    assert (json.loads(out)[0]["latest"], json.loads(out)[0]["count"]) == (2, 2)
    code, out, _ = run(capsys, "tail", store_path, "t", "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(e["offset"], e["key"], e["value"], e["headers"]) for e in lines] == [
        (0, "k", {"a": 1}, {"h": "v"}), (1, None, "plain", None)]
    code, out, _ = run(capsys, "tail", store_path, "t", "--from", "1")
    assert out.split("\t")[0] == "1" and out.rstrip().endswith("plain")


def test_publish_ndjson_from_stdin_in_batches(capsys, store_path, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f'{{"n": {i}}}\n' for i in range(25))))
    code, out, _ = run(capsys, "publish", store_path, "t", "--ndjson", "-", "--batch-size", "10",
                       "--json", "--create")
    assert code == 0 and json.loads(out) == {"topic": "t", "published": 25, "first_offset": 0}
    with Store(store_path) as store:
        assert [e.value["n"] for e in store.read("t")] == list(range(25))


def test_bad_ndjson_line_is_named_and_batch_not_stored(capsys, store_path, tmp_path):
    source = tmp_path / "in.ndjson"
    source.write_text('{"ok": 1}\nnot json\n')
    existing(store_path)
    code, _, err = run(capsys, "publish", store_path, "t", "--ndjson", str(source))
    assert code == 1 and "line 2 is not valid JSON" in err
    with Store(store_path) as store:
        assert store.read("t") == []


def test_consumers_and_prune_tables(capsys, store_path):
    with Store(store_path) as store:
        store.publish_many("t", range(10))
        store.commit_offsets("c", {"t": 4})
    code, out, _ = run(capsys, "consumers", store_path)
    assert out.splitlines()[0].split() == ["consumer", "topic", "next_offset", "latest", "lag",
                                           "updated_utc"]
    assert out.splitlines()[1].split()[:5] == ["c", "t", "4", "10", "6"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", out.splitlines()[1].split()[5])
    code, out, _ = run(capsys, "prune", store_path, "--max-rows", "2", "--json")
    assert json.loads(out) == [{"topic": "t", "deleted": 4, "earliest_before": 0,
                                "earliest_after": 4, "held_by": "c"}]


def test_backup_and_check(capsys, store_path, tmp_path):
    with Store(store_path) as store:
        store.publish_many("t", range(10))
    dest = str(tmp_path / "b.sqlite")
    assert run(capsys, "backup", store_path, dest)[0] == 0
    code, out, _ = run(capsys, "check", dest, "--json")
    assert code == 0 and json.loads(out) == {"ok": True, "problems": [], "warnings": []}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["topics", "{missing}"], "create it with `sqliteq init"),
        (["publish", "{store}", "bad name", "v"], "invalid topic name 'bad name'"),
        (["publish", "{store}", "t", "v", "--ndjson", "-"], "a VALUE or --ndjson FILE, not both"),
        (["publish", "{store}", "t", "{{", "--value-format", "json"], "VALUE is not valid JSON"),
        (["publish", "{store}", "t", "v", "--header", "novalue"], "NAME=VALUE"),
        (["tail", "{store}", "nope"], "topic 'nope' does not exist"),
    ],
)
def test_errors_exit_1_with_one_line_message(capsys, store_path, tmp_path, argv, message):
    existing(store_path)
    argv = [a.format(store=store_path, missing=str(tmp_path / "missing.sqlite")) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert message in err
    assert err.startswith(f"sqliteq {argv[0]}: ") and err.count("\n") == 1


FOREIGN_COMMANDS = [
    ["init", "{path}"], ["topics", "{path}"], ["publish", "{path}", "t", "v"],
    ["tail", "{path}", "t"], ["consumers", "{path}"], ["prune", "{path}"],
    ["backup", "{path}", "{dest}"], ["check", "{path}"],
    ["topic", "create", "{path}", "t"], ["topic", "config", "{path}", "t", "--retention", "1d"],
    ["topic", "delete", "{path}", "t", "--yes"], ["tail", "{path}", "t", "--follow"],
    ["consumer", "reset", "{path}", "c", "--topic", "t", "--to-latest"],
    ["consumer", "delete", "{path}", "c"],
    ["queue", "add", "{path}", "q", "v"], ["queue", "list", "{path}"],
    ["queue", "show", "{path}", "q"], ["queue", "config", "{path}", "q", "--max-attempts", "3"],
    ["queue", "stats", "{path}"], ["queue", "peek", "{path}", "q"],
    ["queue", "purge", "{path}", "q"], ["dlq", "list", "{path}", "q"],
    ["dlq", "requeue", "{path}", "q"], ["dlq", "purge", "{path}", "q"],
    ["job", "get", "{path}", "q", "1"], ["job", "remove", "{path}", "q", "1"],
    ["metrics", "{path}"],
]


def test_every_command_refuses_a_foreign_sqlite_file_leaving_it_byte_identical(
    capsys, store_path, tmp_path
):
    before = make_foreign_sqlite(store_path)
    for template in FOREIGN_COMMANDS:
        argv = [a.format(path=store_path, dest=str(tmp_path / "copy.sqlite")) for a in template]
        code, out, err = run(capsys, *argv)
        assert code == 1, argv
        assert "not a spark_queue store" in (out if argv[0] == "check" else err), argv
        assert file_digest(store_path) == before, argv
    assert sorted(os.listdir(tmp_path)) == ["store.sqlite"]


def test_auto_stores_what_is_not_standard_json_as_text(capsys, store_path):
    # Python's json reads NaN and Infinity; standard JSON has no such values (#24).
    with Store(store_path) as store:
        store.topic("t").create()
    for text in ("NaN", "Infinity", "-Infinity", "1e999x", "42"):
        assert run(capsys, "publish", store_path, "t", "--", text)[0] == 0
    with Store(store_path) as store:
        assert [(e.value, e.value_type) for e in store.read("t")] == [
            ("NaN", "text"), ("Infinity", "text"), ("-Infinity", "text"), ("1e999x", "text"),
            (42, "json")]


def test_a_header_given_twice_is_refused_and_nothing_is_published(capsys, store_path):
    with Store(store_path) as store:
        store.topic("t").create()
    code, out, err = run(capsys, "publish", store_path, "t", "v", "--header", "a=1",
                         "--header", "a=2")
    assert (code, out) == (1, "") and "--header 'a' is given twice (a=1 and a=2)" in err
    with Store(store_path) as store:
        assert store.read("t") == []


def test_check_on_a_store_an_older_release_wrote_says_it_needs_migrating_and_writes_nothing(
    capsys, tmp_path
):
    # Was {"ok": false, "problems": ["...: no such table: sq_time_marks"]} and nothing on
    # stderr (issue 34); tail and topics say it needs migrating.
    import pathlib
    import shutil

    fixtures = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "stores"
    for fixture in sorted(fixtures.glob("v*.sqlite")):
        path = str(tmp_path / fixture.name)
        shutil.copyfile(fixture, path)
        before = file_digest(path)
        for argv in (["check", path], ["check", path, "--json"]):
            code, out, err = run(capsys, *argv)
            assert (code, out) == (1, ""), (fixture.name, out)
            assert err.count("\n") == 1 and "needs migrating from schema version" in err, err
            assert f"sqliteq init {path}" in err
        _, _, topics_err = run(capsys, "topics", path)
        assert topics_err.split(": ", 1)[1] == err.split(": ", 1)[1]
        assert file_digest(path) == before
