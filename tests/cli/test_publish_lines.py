"""Producing from the shell (#26): publish reads stdin when no VALUE is given, as text or
JSON lines, with a key per line; every flag is applied or refused, never ignored."""

from __future__ import annotations

import io

import pytest

from spark_queue.store import Store
from tests.cli.cli_run import existing, one_line_error, run_json


def stdin(monkeypatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def events(path: str) -> list[tuple]:
    with Store(path, create=False) as store:
        return [(e.key, e.value, e.headers) for e in store.read("t")]


def test_publish_without_value_reads_stdin_lines_as_json_or_text(capsys, store_path, monkeypatch):
    existing(store_path)
    stdin(monkeypatch, 'hello world\n{"n": 1}\n\n42\nNaN\r\n')
    assert run_json(capsys, "publish", store_path, "t") == {
        "topic": "t", "published": 4, "first_offset": 0}
    assert events(store_path) == [
        (None, "hello world", None), (None, {"n": 1}, None), (None, 42, None),
        (None, "NaN", None)]


def test_a_key_separator_gives_each_line_its_key(capsys, store_path, monkeypatch):
    existing(store_path)
    stdin(monkeypatch, "c-7:hello\nc-8:{\"a\": 1}\nc-9:x:y\n")
    run_json(capsys, "publish", store_path, "t", "--key-separator", ":", "--header", "src=sh")
    assert events(store_path) == [
        ("c-7", "hello", {"src": "sh"}), ("c-8", {"a": 1}, {"src": "sh"}),
        ("c-9", "x:y", {"src": "sh"})]


def test_a_line_without_the_key_separator_is_named_and_its_batch_not_stored(
    capsys, store_path, monkeypatch
):
    existing(store_path)
    stdin(monkeypatch, "a:1\nno key here\n")
    err = one_line_error(capsys, "publish", store_path, "t", "--key-separator", ":")
    assert "stdin line 2 has no key separator ':'" in err
    assert events(store_path) == []


def test_key_and_headers_apply_to_every_ndjson_line(capsys, store_path, tmp_path):
    # --key with --ndjson was silently dropped before (#26).
    existing(store_path)
    source = tmp_path / "in.ndjson"
    source.write_text('{"n": 1}\n{"n": 2}\n')
    run_json(capsys, "publish", store_path, "t", "--ndjson", str(source), "--key", "k",
             "--header", "h=v")
    assert events(store_path) == [("k", {"n": 1}, {"h": "v"}), ("k", {"n": 2}, {"h": "v"})]


def test_ndjson_with_value_format_text_stores_lines_as_text(capsys, store_path, tmp_path):
    existing(store_path)
    source = tmp_path / "in.txt"
    source.write_text("plain line\n42\n")
    run_json(capsys, "publish", store_path, "t", "--ndjson", str(source),
             "--value-format", "text")
    assert events(store_path) == [(None, "plain line", None), (None, "42", None)]
    # Without it, --ndjson still means JSON: a text line is refused, naming it.
    err = one_line_error(capsys, "publish", store_path, "t", "--ndjson", str(source))
    assert "line 1 is not valid JSON" in err


def test_queue_add_without_value_reads_stdin_lines(capsys, store_path, monkeypatch):
    existing(store_path)
    stdin(monkeypatch, 'resize a.png\n{"img": 7}\n')
    assert run_json(capsys, "queue", "add", store_path, "q")["enqueued"] == 2
    with Store(store_path) as store:
        assert [j.payload for j in store.queue("q").peek(10)] == ["resize a.png", {"img": 7}]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["publish", "{p}", "t", "v", "--batch-size", "5"], "--batch-size applies to lines"),
        (["publish", "{p}", "t", "v", "--key-separator", ":"],
         "--key-separator applies to lines"),
        (["publish", "{p}", "t", "--key", "k", "--key-separator", ":"],
         "give --key (one key for every line) or --key-separator"),
        (["queue", "add", "{p}", "q", "v", "--batch-size", "5"], "--batch-size applies to lines"),
        (["queue", "add", "{p}", "q", "--idempotency-key", "k"],
         "--idempotency-key names one job"),
    ],
)
def test_a_flag_that_cannot_apply_is_refused_and_nothing_is_written(
    capsys, store_path, monkeypatch, argv, fragment
):
    existing(store_path)
    stdin(monkeypatch, "a:1\n")
    err = one_line_error(capsys, *[a.format(p=store_path) for a in argv])
    assert fragment in err
    assert events(store_path) == []
    with Store(store_path) as store:
        assert store.queue("q").peek(10) == []
