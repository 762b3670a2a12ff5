"""The queue, dlq, job and metrics commands of the sqliteq CLI."""

from __future__ import annotations

import io
import urllib.request

from spark_queue.metrics import MetricsServer, render
from spark_queue.store import Store
from tests.cli.cli_run import run, run_json


def test_queue_add_config_show_stats_peek_purge(capsys, store_path):
    Store(store_path).close()
    config = run_json(
        capsys,
        "queue",
        "config",
        store_path,
        "jobs",
        "--max-attempts",
        "2",
        "--visibility-timeout-ms",
        "1000",
        "--max-size",
        "10",
    )
    assert (config["max_attempts"], config["max_size"]) == (2, 10)
    first = run_json(
        capsys,
        "queue",
        "add",
        store_path,
        "jobs",
        '{"n": 1}',
        "--value-format",
        "json",
        "--priority",
        "3",
        "--idempotency-key",
        "k",
    )
    again = run_json(capsys, "queue", "add", store_path, "jobs", "other", "--idempotency-key", "k")
    assert first["id"] == again["id"]
    run_json(
        capsys,
        "queue",
        "add",
        store_path,
        "jobs",
        "later",
        "--delay-ms",
        "60000",
        "--ttl-ms",
        "120000",
        "--max-attempts",
        "1",
    )
    [stats] = run_json(capsys, "queue", "stats", store_path, "jobs")
    assert (stats["ready"], stats["delayed"]) == (1, 1)
    assert run_json(capsys, "queue", "show", store_path, "jobs")["max_size"] == 10
    [row] = run_json(capsys, "queue", "list", store_path)
    assert row["queue"] == "jobs" and row["ready"] == 1
    peek = run_json(capsys, "queue", "peek", store_path, "jobs", "--limit", "1")
    assert peek[0]["payload"] == {"n": 1} and peek[0]["state"] == "ready"
    assert run_json(capsys, "queue", "purge", store_path, "jobs", "--expired")["deleted"] == 0
    assert run_json(capsys, "queue", "purge", store_path, "jobs")["deleted"] == 2
    code, out, _ = run(capsys, "queue", "stats", store_path)
    assert code == 0 and "oldest_ready_age" in out.splitlines()[0].split()


def test_queue_add_ndjson_in_batches_and_the_full_queue_error(capsys, store_path, monkeypatch):
    Store(store_path).close()
    run(capsys, "queue", "config", store_path, "q", "--max-size", "5")
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f'{{"i": {i}}}\n' for i in range(5))))
    result = run_json(capsys, "queue", "add", store_path, "q", "--ndjson", "-", "--batch-size", "2")
    assert result["enqueued"] == 5
    code, _, err = run(capsys, "queue", "add", store_path, "q", "x")
    assert code == 1 and "max_size 5" in err
    code, _, err = run(
        capsys, "queue", "config", store_path, "q", "--max-size", "2", "--no-max-size"
    )
    assert code == 1 and "not both" in err
    assert run_json(capsys, "queue", "config", store_path, "q", "--no-max-size")["max_size"] is None


def test_dlq_list_requeue_purge_and_job_get_remove(capsys, store_path):
    with Store(store_path) as store:
        q = store.queue("q", max_attempts=1)
        ids = q.enqueue_many(["a", "b", "c"])
        for job in q.claim(2):
            q.nack(job, "handler failed")
    dead = run_json(capsys, "dlq", "list", store_path, "q")
    assert [d["last_error"] for d in dead] == ["handler failed"] * 2
    assert run_json(capsys, "dlq", "requeue", store_path, "q", str(ids[0]))["ids"] == [ids[0]]
    assert run_json(capsys, "dlq", "purge", store_path, "q")["deleted"] == 1
    assert run_json(capsys, "job", "get", store_path, "q", str(ids[0]))["state"] == "ready"
    removed = run_json(capsys, "job", "remove", store_path, "q", str(ids[2]))
    assert removed["removed_from"] == "queued"
    code, _, err = run(capsys, "job", "get", store_path, "q", str(ids[2]))
    assert code == 1 and f"no job with id {ids[2]}" in err
    code, _, err = run(capsys, "queue", "show", store_path, "nope")
    assert code == 1 and "queue 'nope' does not exist" in err


def test_worker_command_drains_a_queue(capsys, store_path, tmp_path, monkeypatch):
    (tmp_path / "cli_handlers.py").write_text(
        "DONE = []\ndef handle(job):\n    DONE.append(job.payload)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    with Store(store_path) as store:
        store.queue("q").enqueue_many(range(50))
    result = run_json(
        capsys,
        "worker",
        store_path,
        "cli_handlers:handle",
        "--queue",
        "q",
        "--concurrency",
        "2",
        "--batch-size",
        "8",
        "--until-empty",
    )
    assert result["acked"] == 50
    import cli_handlers

    assert sorted(cli_handlers.DONE) == list(range(50))
    code, _, err = run(capsys, "worker", store_path, "nomodule", "--queue", "q")
    assert code == 1 and "module:function" in err


def test_metrics_text_has_queue_topic_and_consumer_gauges(capsys, store_path):
    with Store(store_path) as store:
        store.queue("q", max_attempts=1).enqueue_many(["a", "b"])
        store.queue("q").nack(store.queue("q").claim(1)[0], "x")
        store.publish_many("t", range(5))
        store.commit_offsets("c1", {"t": 2})
    code, out, _ = run(capsys, "metrics", store_path)
    assert code == 0
    assert 'sqliteq_queue_jobs{queue="q",state="ready"} 1' in out
    assert 'sqliteq_queue_jobs{queue="q",state="dead"} 1' in out
    assert 'sqliteq_queue_oldest_ready_age_seconds{queue="q"}' in out
    assert 'sqliteq_topic_latest_offset{topic="t"} 5' in out
    assert 'sqliteq_consumer_lag{consumer="c1",topic="t"} 3' in out
    assert "# TYPE sqliteq_consumer_lag gauge" in out


def test_metrics_server_answers_scrapes_on_localhost(store_path):
    with Store(store_path) as store:
        store.queue("q").enqueue("a")
        expected = render(store)
    server = MetricsServer(store_path, port=0)
    server.serve_in_thread()
    try:
        url = f"http://127.0.0.1:{server.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            body = response.read().decode()
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert body.split("sqliteq_queue_oldest")[0] == expected.split("sqliteq_queue_oldest")[0]
    finally:
        server.shutdown()
        server.server_close()


def test_metrics_serve_runs_until_interrupted(store_path):
    import signal
    import subprocess
    import sys

    Store(store_path).close()
    # Ctrl-C given back first: a suite started in the background (`make test &`) hands its
    # children SIGINT ignored, and Python then installs no KeyboardInterrupt handler.
    serve = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.argv = ['sqliteq', *sys.argv[1:]]; runpy.run_module('spark_queue', "
        "run_name='__main__')"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", serve, "metrics", store_path, "--serve", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        assert "http://127.0.0.1:" in line, line
        url = line.split()[-1]
        with urllib.request.urlopen(url, timeout=10) as response:
            assert b"# TYPE sqliteq_queue_jobs gauge" in response.read()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            # A bound for a stuck process, not a speed check: on a loaded machine the exit
            # (the housekeeping thread's current step, the interpreter's teardown) took >10 s.
            assert proc.wait(120) == 130
        finally:
            if proc.poll() is None:  # never leave a server behind
                proc.kill()
                proc.wait()


def test_queue_controls_are_set_shown_and_switched_off_from_the_cli(capsys, store_path):
    config = run_json(
        capsys, "queue", "config", store_path, "q", "--create", "--max-leased", "3",
        "--rate-limit-per-s", "2.5", "--rate-burst", "4", "--max-payload-bytes", "100",
    )
    assert (config["max_leased"], config["rate_limit_per_s"], config["rate_burst"]) == (3, 2.5, 4)
    assert config["max_payload_bytes"] == 100 and config["paused"] is False
    assert "rate_tokens" not in config  # the bucket's stored state is not a setting
    show = run_json(capsys, "queue", "show", store_path, "q")
    assert (show["held_by"], show["rate_tokens"]) == (None, 4.0)
    assert run_json(capsys, "queue", "pause", store_path, "q") == {"queue": "q", "paused": True}
    [stats] = run_json(capsys, "queue", "stats", store_path, "q")
    assert (stats["paused"], stats["held_by"]) == (True, "paused")
    code, out, _ = run(capsys, "queue", "list", store_path)
    assert code == 0 and "max_leased" in out.splitlines()[0]
    assert run_json(capsys, "queue", "resume", store_path, "q")["paused"] is False
    off = run_json(
        capsys, "queue", "config", store_path, "q", "--no-max-leased", "--no-rate-limit",
        "--no-rate-burst", "--no-max-payload-bytes",
    )
    assert [off[k] for k in ("max_leased", "rate_limit_per_s", "rate_burst",
                             "max_payload_bytes")] == [None] * 4
    code, _, err = run(capsys, "queue", "config", store_path, "q", "--max-leased", "2",
                       "--no-max-leased")
    assert code == 1 and "not both" in err
    code, _, err = run(capsys, "queue", "pause", store_path, "typo")
    assert code == 1 and "queue 'typo' does not exist" in err


def test_payload_over_the_limit_exits_1_with_one_line_naming_the_limit(capsys, store_path):
    run_json(capsys, "queue", "config", store_path, "q", "--create", "--max-payload-bytes", "4")
    code, out, err = run(capsys, "queue", "add", store_path, "q", "12345")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("sqliteq queue add: ")
    assert "PayloadTooLarge" not in err and "5 bytes, over the max_payload_bytes of 4" in err
    topic = run_json(capsys, "topic", "create", store_path, "t", "--max-payload-bytes", "4")
    assert (topic["name"], topic["max_payload_bytes"]) == ("t", 4)
    code, _, err = run(capsys, "publish", store_path, "t", "12345")
    assert code == 1 and err.count("\n") == 1 and "topic 't' refuses row 0" in err
    [row] = run_json(capsys, "topics", store_path)
    assert (row["max_payload_bytes"], row["count"]) == (4, 0)
    assert run_json(capsys, "topic", "config", store_path, "t", "--no-max-payload-bytes")[
        "max_payload_bytes"
    ] is None
    assert run(capsys, "publish", store_path, "t", "12345")[0] == 0
    # Without a setting, topic config shows the settings (issue 34; it was an error).
    assert run_json(capsys, "topic", "config", store_path, "t")["max_payload_bytes"] is None


def test_metrics_show_pause_throttling_and_limits(capsys, store_path):
    with Store(store_path) as store:
        store.queue("capped", max_leased=1).enqueue_many(["a", "b"])
        store.queue("capped").claim(1)
        store.queue("off").enqueue("x")
        store.queue("off").pause()
        store.queue("rated", rate_limit_per_s=5.0, max_payload_bytes=64)
        store.topic("t").set_limits(max_payload_bytes=128)
    code, out, _ = run(capsys, "metrics", store_path)
    assert code == 0
    for line in (
        'sqliteq_queue_paused{queue="off"} 1',
        'sqliteq_queue_paused{queue="capped"} 0',
        'sqliteq_queue_throttled{queue="capped"} 1',
        'sqliteq_queue_throttled{queue="off"} 0',
        'sqliteq_queue_max_leased{queue="capped"} 1',
        'sqliteq_queue_rate_limit_per_second{queue="rated"} 5.0',
        'sqliteq_queue_rate_tokens{queue="rated"} 5.0',
        'sqliteq_queue_max_payload_bytes{queue="rated"} 64',
        'sqliteq_topic_max_payload_bytes{topic="t"} 128',
    ):
        assert line in out.splitlines(), line
    assert 'sqliteq_queue_max_leased{queue="off"}' not in out
