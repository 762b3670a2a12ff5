"""Every table shows times the same way (UTC ISO-8601, `_utc` columns); --json keeps raw ms."""

from __future__ import annotations

import json
import re

import pytest

from spark_queue.cli import main
from spark_queue.store import Store

ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["topics", "{s}"], None),
        (["consumers", "{s}"], "updated_ms"),
        (["queue", "peek", "{s}", "q"], "available_at_ms"),
        (["queue", "show", "{s}", "q"], "created_ms"),
        (["job", "get", "{s}", "q", "{job}"], "enqueued_ms"),
        (["dlq", "list", "{s}", "dead"], "dead_ms"),
    ],
)
def test_tables_show_utc_iso_times_and_json_keeps_epoch_milliseconds(
    capsys, store_path, argv, field
):
    with Store(store_path) as store:
        store.publish("t", 1)
        store.commit_offsets("c", {"t": 1})
        [job] = store.queue("q").enqueue_many(["x"])
        dead = store.queue("dead", max_attempts=1)
        dead.enqueue_many(["y"])
        [claimed] = dead.claim(1)
        dead.nack_many([claimed], "boom")
    argv = [a.format(s=store_path, job=job) for a in argv]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    record = data[0] if isinstance(data, list) else data
    assert not re.search(r"\b1\d{12}\b", table)  # no raw epoch milliseconds for people
    if field is not None:
        assert field.removesuffix("_ms") + "_utc" in table and ISO_UTC.search(table)
        assert isinstance(record[field], int) and record[field] > 1_600_000_000_000
