"""`sqliteq consumers` shows each query's position under a shared consumer name;
`consumer delete|reset --query ID` handle one of them, without it all of them."""

from __future__ import annotations

from spark_queue.store import Store
from tests.cli.cli_run import run, run_json


def test_consumers_show_each_querys_position_and_delete_one(capsys, store_path):
    with Store(store_path) as store:
        store.publish_many("t", range(10))
        store.commit_offsets("bronze", {"t": 9}, reader="fastquery")
        store.commit_offsets("bronze", {"t": 3}, reader="slowquery")
    rows = run_json(capsys, "consumers", store_path)
    assert [(r["consumer"], r.get("query"), r["next_offset"]) for r in rows] == [
        ("bronze", None, 3), ("bronze", "fastquery", 9), ("bronze", "slowquery", 3)]
    # Each position with the time since its query saved it, and whether it holds (issue #59).
    assert [(r.get("holds"), r.get("saved_age_ms", -1) >= 0) for r in rows] == [
        (None, False), (True, True), (True, True)]
    code, out, _ = run(capsys, "consumers", store_path)
    assert code == 0 and out.splitlines()[0].split()[-3:] == ["query", "saved_age", "holds"]
    run_json(capsys, "consumer", "reset", store_path, "bronze", "--query", "fastquery",
             "--to-offset", "5")
    assert run_json(capsys, "consumer", "delete", store_path, "bronze", "--query",
                    "slowquery")["deleted_offsets"] == 1
    rows = run_json(capsys, "consumers", store_path)
    assert [(r.get("query"), r["next_offset"]) for r in rows] == [(None, 5), ("fastquery", 5)]
    run_json(capsys, "consumer", "delete", store_path, "bronze")
    assert run_json(capsys, "consumers", store_path) == []
