"""What sqliteq writes: only into existing stores unless asked, VALUEs as people mean them,
NDJSON that fails half-way says what stayed, progress only for a person watching."""

from __future__ import annotations

import io
import json
import os

import pytest

from spark_queue.cli import main
from spark_queue.store import Store
from tests.cli.cli_run import existing, run


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_write_commands_refuse_a_missing_store_and_create_it_only_when_asked(
    capsys, tmp_path
):
    path = str(tmp_path / "app.sqlite")
    for argv in (["publish", path, "t", "v"], ["queue", "add", path, "q", "v"],
                 ["queue", "config", path, "q", "--max-size", "3"]):
        code, _, err = run(capsys, *argv)
        assert code == 1 and f"store file {path!r} does not exist" in err
        assert f"sqliteq init {path}" in err and "--create" in err
        assert not os.path.exists(path)
    code, out, err = run(capsys, "publish", path, "t", "v", "--create", "--json")
    assert code == 0 and json.loads(out) == {"topic": "t", "offset": 0}
    assert err == f"sqliteq publish: created store file {path!r}\n"
    code, _, err = run(capsys, "queue", "add", path, "q", "v", "--create")
    assert code == 0 and err == ""  # it exists now: nothing to say


def test_init_says_it_created_the_store_and_never_makes_directories(capsys, tmp_path):
    path = str(tmp_path / "a.sqlite")
    code, _, err = run(capsys, "init", path)
    assert code == 0 and err == f"sqliteq init: created store file {path!r}\n"
    assert run(capsys, "init", path)[2] == ""  # an existing store: migrated, not created
    nested = str(tmp_path / "no" / "dir" / "a.sqlite")
    code, _, err = run(capsys, "init", nested)
    assert code == 1 and "does not exist" in err and "never makes directories" in err
    assert not os.path.exists(tmp_path / "no")


def test_queue_add_json_text_reaches_a_worker_handler_as_a_dict(
    capsys, tmp_path, monkeypatch
):
    path = str(tmp_path / "app.sqlite")
    (tmp_path / "img_handlers.py").write_text(
        "SEEN = []\ndef thumb(job):\n    SEEN.append(job.payload['img'])\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert run(capsys, "init", path)[0] == 0
    assert run(capsys, "queue", "add", path, "q", '{"img": 7}', "--create")[0] == 0
    code, out, err = run(capsys, "worker", path, "img_handlers:thumb", "--queue", "q",
                         "--until-empty", "--json")
    assert code == 0, err
    assert json.loads(out)["acked"] == 1 and json.loads(out)["dead_lettered"] == 0
    import img_handlers

    assert img_handlers.SEEN == [7]


@pytest.mark.parametrize("command", [["publish", "{path}", "t"], ["queue", "add", "{path}", "q"]])
def test_publish_and_queue_add_store_json_when_it_parses_and_text_otherwise(
    capsys, store_path, command
):
    existing(store_path)
    argv = [a.format(path=store_path) for a in command]
    for value in ('{"img": 7}', "42", "true", "hello", "{not json", "42"):
        assert run(capsys, *argv, value)[0] == 0
    assert run(capsys, *argv, "42", "--value-format", "text")[0] == 0
    with Store(store_path) as store:
        if command[0] == "publish":
            stored = [e.value for e in store.read("t")]
        else:
            stored = [j.payload for j in store.queue("q").peek(10)]
    assert stored == [{"img": 7}, 42, True, "hello", "{not json", 42, "42"]


def test_value_format_default_is_stated_in_help(capsys):
    for argv in (["publish", "--help"], ["queue", "add", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        out = " ".join(capsys.readouterr().out.split())
        assert "auto (the default for VALUE and stdin) stores it as JSON when it parses" in out
        assert "json (the default with --ndjson)" in out


@pytest.mark.parametrize("command", ["publish", "queue add"])
def test_ndjson_failing_after_committed_batches_names_them_and_the_line_to_resume_from(
    capsys, store_path, tmp_path, command
):
    existing(store_path)
    source = tmp_path / "in.ndjson"
    source.write_text("".join(f'{{"n": {i}}}\n' for i in range(5)) + "oops\n{\"n\": 6}\n")
    target = ["publish", store_path, "t"] if command == "publish" else [
        "queue", "add", store_path, "q"]
    code, out, err = run(capsys, *target, "--ndjson", str(source), "--batch-size", "2")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith(f"sqliteq {command}: ")
    assert "line 6 is not valid JSON" in err
    assert "Lines 1-4 of" in err and "Resume from line 5" in err and "tail -n +5" in err
    if command == "publish":
        assert "offsets 0..3 of topic 't', 4 events" in err
    else:
        assert "4 jobs of queue 'q', ids 1..4" in err
    with Store(store_path) as store:  # batches 1-2 and 3-4 stay; 5 with the bad line does not
        if command == "publish":
            assert [e.value["n"] for e in store.read("t")] == [0, 1, 2, 3]
        else:
            assert [j.payload["n"] for j in store.queue("q").peek(10)] == [0, 1, 2, 3]


@pytest.mark.parametrize("command", ["publish", "queue add"])
def test_ndjson_progress_shows_on_a_terminal_only_and_never_with_json(
    capsys, store_path, monkeypatch, command
):
    existing(store_path)
    target = ["publish", store_path, "t"] if command == "publish" else [
        "queue", "add", store_path, "q"]
    lines = "".join(f"{i}\n" for i in range(30))
    verb = "published" if command == "publish" else "enqueued"

    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    code, _, err = run(capsys, *target, "--ndjson", "-", "--batch-size", "10")
    assert code == 0 and err == ""  # capsys' stderr is not a terminal: silent

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    assert main([*target, "--ndjson", "-", "--batch-size", "10"]) == 0
    shown = terminal.getvalue()
    assert shown.startswith(f"\rsqliteq {command}: 10 {verb}")  # the first batch shows at once
    assert shown.endswith(f"\rsqliteq {command}: 30 {verb}\n")  # the total ends the line

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    assert main([*target, "--ndjson", "-", "--batch-size", "10", "--json"]) == 0
    assert terminal.getvalue() == ""


def test_ndjson_interrupted_after_committed_batches_says_where_to_resume(
    capsys, store_path, monkeypatch
):
    existing(store_path)
    real = Store.publish_many
    calls = []

    def interrupted_on_the_second_batch(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Store, "publish_many", interrupted_on_the_second_batch)
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n2\n3\n4\n"))
    code, out, err = run(capsys, "publish", store_path, "t", "--ndjson", "-", "--batch-size", "2")
    assert code == 130 and out == ""
    assert err == (
        "sqliteq publish: interrupted. Lines 1-2 of stdin were already committed (offsets 0..1 "
        "of topic 't', 2 events) and stay; nothing after line 2 was stored. Resume from line 3 "
        "(e.g. `tail -n +3 FILE | ... --ndjson -`), not from the start, or those lines are "
        "stored twice.\n"
    )


def test_dlq_list_shows_the_exception_line_and_json_keeps_the_whole_error(capsys, store_path):
    trace = (
        "Traceback (most recent call last):\n"
        '  File "h.py", line 2, in thumb\n'
        "    job.payload['img']\n"
        "TypeError: string indices must be integers, not 'str'\n"
    )
    with Store(store_path) as store:
        q = store.queue("q", max_attempts=1)
        q.enqueue("x")
        [job] = q.claim()
        q.nack(job, trace)
    code, out, _ = run(capsys, "dlq", "list", store_path, "q")
    rows = out.splitlines()
    assert code == 0 and len(rows) == 2
    assert rows[1].endswith("TypeError: string indices must be integers, not 'str'")
    code, out, _ = run(capsys, "dlq", "list", store_path, "q", "--json")
    assert json.loads(out)[0]["last_error"] == trace
