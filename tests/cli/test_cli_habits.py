"""What Kafka, kcat and rq users type first (issue 34): flags before the value, ``-`` for
stdin, the noun-verb grammar, Kafka's and rq's words, values-only output."""

from __future__ import annotations

import io
import json

from spark_queue.store import Store
from tests.cli.cli_run import existing, one_line_error, run, usage_error


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
    assert demo_config.load_config("-", {}).events == 7


def test_worker_queue_given_twice_is_refused_never_the_last_one_silently(capsys, store_path):
    existing(store_path)
    with Store(store_path) as store:
        store.queue("other").configure()
        store.queue("q").enqueue(1)
    err = one_line_error(capsys, "worker", store_path, "json:dumps", "--queue", "q",
                         "--queue", "other", "--until-empty")
    assert "--queue is given 2 times ('q', 'other')" in err
    assert "one `sqliteq worker` per queue" in err
    with Store(store_path) as store:
        assert store.queue("q").stats().ready == 1  # nothing ran


def test_every_noun_lists_shows_and_creates_with_the_same_verbs(capsys, store_path):
    existing(store_path)
    with Store(store_path) as store:
        store.publish("t", 1)
        store.commit_offsets("billing", {"t": 1})
    run_topics = run(capsys, "topics", store_path, "--json")[1]
    assert run(capsys, "topic", "list", store_path, "--json")[1] == run_topics
    for verb in ("show", "describe"):
        code, out, err = run(capsys, "topic", verb, store_path, "t", "--json")
        assert code == 0, err
        shown = json.loads(out)
        assert (shown["name"], shown["latest"], shown["consumers"]) == ("t", 1, {"billing": 0})
    # topic config without a flag shows the settings (it was an error).
    code, out, err = run(capsys, "topic", "config", store_path, "t", "--json")
    assert code == 0 and json.loads(out)["retention_ms"] is None, err
    assert (run(capsys, "consumer", "list", store_path, "--json")[1]
            == run(capsys, "consumers", store_path, "--json")[1])
    for verb in ("show", "describe"):
        code, out, err = run(capsys, "consumer", verb, store_path, "billing", "--json")
        assert code == 0, err
        assert [(c["topic"], c["next_offset"], c["lag"]) for c in json.loads(out)] == [
            ("t", 1, 0)]
    code, out, err = run(capsys, "consumer", "show", store_path, "nobody")
    assert code == 1 and f"sqliteq consumer list {store_path}" in err
    code, out, err = run(capsys, "queue", "create", store_path, "emails", "--max-attempts", "8",
                         "--json")
    assert code == 0 and json.loads(out)["max_attempts"] == 8, err
    code, out, err = run(capsys, "queue", "create", store_path, "emails")
    assert code == 1 and "queue 'emails' already exists" in err and "--if-not-exists" in err
    assert run(capsys, "queue", "create", store_path, "emails", "--if-not-exists")[0] == 0
    code, out, _ = run(capsys, "queue", "describe", store_path, "emails", "--json")
    assert code == 0 and json.loads(out)["max_attempts"] == 8


def test_kafka_and_rq_words_map_to_ours_and_never_suggest_a_deleting_command(
    capsys, store_path
):
    existing(store_path)
    assert run(capsys, "produce", store_path, "t", "--key", "k", "v")[0] == 0
    code, out, _ = run(capsys, "consume", store_path, "t", "--from-beginning", "--json")
    assert code == 0 and [json.loads(line)["value"] for line in out.splitlines()] == ["v"]
    for word, suggestion in (("describe", "sqliteq topic show PATH TOPIC"),
                             ("info", "sqliteq queues PATH"), ("prodce", "publish")):
        last = usage_error(capsys, word, store_path)
        assert suggestion in last, last
    for typo in ("purne", "prnue", "prodce", "produc"):
        assert "prune" not in usage_error(capsys, typo, store_path)


def test_tail_values_prints_each_value_alone(capsys, store_path):
    existing(store_path)
    with Store(store_path) as store:
        store.publish("t", "plain", key="k", headers={"h": "v"})
        store.publish("t", {"a": 1})
        store.publish("t", "two\nlines")
    code, out, _ = run(capsys, "tail", store_path, "t", "--values")
    assert code == 0 and out.splitlines() == ["plain", '{"a": 1}', '"two\\nlines"']


def test_peek_tables_show_one_line_of_the_error_and_json_and_queue_show_job_all(
    capsys, store_path
):
    existing(store_path)
    error = 'Traceback (most recent call last):\n  File "h.py", line 1\nValueError: bad row 7'
    with Store(store_path) as store:
        q = store.queue("q")
        q.enqueue({"n": 1})
        [job] = q.claim()
        q.nack(job, error, delay_ms=0)
    code, out, _ = run(capsys, "queue", "peek", store_path, "q")
    assert code == 0 and len(out.splitlines()) == 2  # the header and one row
    assert out.splitlines()[1].rstrip().endswith("ValueError: bad row 7")
    code, out, _ = run(capsys, "queue", "peek", store_path, "q", "--json")
    assert json.loads(out)[0]["last_error"] == error
    code, out, _ = run(capsys, "queue", "show", store_path, "q", str(job.id), "--json")
    assert code == 0 and json.loads(out)["last_error"] == error
    code, out, _ = run(capsys, "queue", "show", store_path, "q", str(job.id))
    assert code == 0 and error in out
