"""`sqliteq queue workers`: the workers of a queue, like `rq info`."""

from __future__ import annotations

import json

from spark_queue.cli import main


def test_queue_workers_lists_each_worker_alive_or_lost_and_names_an_unknown_queue(
    capsys, store, store_path
):
    q = store.queue("q")
    q.configure()
    worker_id = q.register_worker(host="box", pid=42, concurrency=4, ttl_ms=60_000)
    assert main(["queue", "workers", store_path, "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["id"] == worker_id and (row["host"], row["pid"], row["alive"]) == ("box", 42, True)
    assert main(["queue", "workers", store_path, "q"]) == 0
    header, line = capsys.readouterr().out.splitlines()
    assert header.split() == ["queue", "id", "host", "pid", "concurrency", "alive", "jobs_held",
                              "started_utc", "seen_utc"]
    assert line.split()[:7] == ["q", str(worker_id), "box", "42", "4", "True", "0"]
    assert main(["queue", "workers", store_path, "nope"]) == 1
    assert "queue 'nope'" in capsys.readouterr().err
