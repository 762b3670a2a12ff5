"""What Kafka, kcat and rq users type first (issue 34): flags before the value, ``-`` for
stdin, the noun-verb grammar, Kafka's and rq's words, values-only output."""

from __future__ import annotations

import io
import json

from spark_queue.store import Store
from tests.cli.cli_run import existing, run, usage_error


def _values(path: str, topic: str = "t") -> list:
    with Store(path) as store:
        return [(e.key, e.value, e.headers) for e in store.read(topic, 0, limit=100)]


def test_flags_go_before_the_value_in_any_order(capsys, store_path):
    existing(store_path)
    assert run(capsys, "publish", store_path, "t", "--key", "k", "v")[0] == 0
    assert run(capsys, "publish", store_path, "t", "--header", "a=b", "--key", "k2",
               "--value-format", "text", "42")[0] == 0
    assert run(capsys, "publish", "--json", store_path, "t", "w")[0] == 0
    assert _values(store_path) == [("k", "v", None), ("k2", "42", {"a": "b"}), (None, "w", None)]
    code, out, err = run(capsys, "queue", "add", store_path, "q", "--priority", "5", "VALUE",
                         "--json")
    assert code == 0, err
    code, out, _ = run(capsys, "queue", "peek", store_path, "q", "--json")
    assert [(j["priority"], j["payload"]) for j in json.loads(out)] == [(5, "VALUE")]
    # An optional positional after a flag elsewhere too; a word too many is still refused.
    code, out, _ = run(capsys, "queue", "stats", store_path, "--json", "q")
    assert code == 0 and [s["queue"] for s in json.loads(out)] == ["q"]
    last = usage_error(capsys, "publish", store_path, "t", "--key", "k", "v", "extra")
    assert last == "sqliteq publish: error: unrecognized arguments: extra"
    assert len(_values(store_path)) == 3


def test_a_dash_value_means_stdin_wherever_a_value_is_read(capsys, store_path, monkeypatch):
    existing(store_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("a\nb\n"))
    assert run(capsys, "publish", store_path, "t", "-")[0] == 0
    assert [v for _, v, _ in _values(store_path)] == ["a", "b"]
    monkeypatch.setattr("sys.stdin", io.StringIO('{"n": 1}\n{"n": 2}\n'))
    assert run(capsys, "queue", "add", store_path, "q", "-", "--priority", "2")[0] == 0
    code, out, _ = run(capsys, "queue", "peek", store_path, "q", "--json")
    assert [j["payload"] for j in json.loads(out)] == [{"n": 1}, {"n": 2}]


def test_demo_config_dash_reads_the_settings_from_stdin(monkeypatch):
    from spark_queue.demo import config as demo_config

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"[producer]\nevents = 7\n")))
    assert demo_config.load("-", {}).events == 7


def test_worker_queue_given_twice_is_refused_never_the_last_one_silently(capsys, store_path):
    existing(store_path)
    last = usage_error(capsys, "worker", store_path, "json:dumps", "--queue", "q",
                       "--queue", "other", "--until-empty")
    assert "--queue is given twice ('q' and 'other')" in last
    assert "one `sqliteq worker` per queue" in last
