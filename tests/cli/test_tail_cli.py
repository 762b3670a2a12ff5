"""sqliteq tail: where it starts (offset, last N, a time), what it prints, and --follow."""

from __future__ import annotations

import json
import os
import re
import time

from spark_queue.cli import tail_command
from spark_queue.store import Record, Store
from tests.cli.cli_run import run

HOUR_MS = 3_600_000
ISO_UTC = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


def tail_json(capsys, *argv: str) -> list[dict]:
    code, out, err = run(capsys, "tail", *argv, "--json")
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


def offsets(capsys, *argv: str) -> list[int]:
    return [e["offset"] for e in tail_json(capsys, *argv)]


def test_from_minus_n_prints_the_last_n_events(capsys, store_path):
    with Store(store_path) as store:
        store.publish_many("t", range(10))
    assert offsets(capsys, store_path, "t", "--from", "-3") == [7, 8, 9]
    assert offsets(capsys, store_path, "t", "--from", "-3", "--limit", "2") == [7, 8]
    assert offsets(capsys, store_path, "t", "--from", "-50") == list(range(10))
    with Store(store_path) as store:
        store.topic("t").prune(retention_rows=2)
    assert offsets(capsys, store_path, "t", "--from", "-5") == [8, 9]  # never below earliest


def test_since_starts_at_the_first_event_at_or_after_a_time(capsys, store_path):
    now = time.time_ns() // 1_000_000
    stamps = [now - 3 * HOUR_MS, now - 2 * HOUR_MS, now - HOUR_MS // 2, now]
    with Store(store_path) as store:
        store.publish_many("t", [Record(i, timestamp_ms=ts) for i, ts in enumerate(stamps)])
    assert offsets(capsys, store_path, "t", "--since", "90m") == [2, 3]
    assert offsets(capsys, store_path, "t", "--since", "1d") == [0, 1, 2, 3]
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((stamps[1] - 1000) // 1000))
    assert offsets(capsys, store_path, "t", "--since", iso + "Z") == [1, 2, 3]
    assert offsets(capsys, store_path, "t", "--since", "2999-01-01T00:00:00") == []


def test_from_and_since_together_are_refused(capsys, store_path):
    with Store(store_path) as store:
        store.publish("t", "x")
    code, out, err = run(capsys, "tail", store_path, "t", "--from", "0", "--since", "1h")
    assert (code, out) == (1, "") and "give --from or --since, not both" in err


def test_json_lines_carry_raw_milliseconds_and_value_type(capsys, store_path):
    with Store(store_path) as store:
        store.publish_many("t", ["text", b"\x00\xff", {"a": 1}])
        store.publish("t", "7")
    events = tail_json(capsys, store_path, "t")
    assert [(e["value"], e["value_type"]) for e in events] == [
        ("text", "text"), ({"base64": "AP8="}, "bytes"), ({"a": 1}, "json"), ("7", "text")]
    assert all(isinstance(e["timestamp_ms"], int) for e in events)


def test_plain_lines_show_utc_time_and_keep_one_event_per_line(capsys, store_path):
    with Store(store_path) as store:
        store.publish("t", "two\nlines", key="k 1")
        store.publish("t", b"\x00\xff")
        store.publish("t", {"a": [1, 2]})
    code, out, _ = run(capsys, "tail", store_path, "t")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3
    assert re.fullmatch(rf'0\t{ISO_UTC} key=k 1\t"two\\nlines"', lines[0])
    assert re.fullmatch(rf"1\t{ISO_UTC}\tbase64:AP8=", lines[1])
    assert re.fullmatch(rf'2\t{ISO_UTC}\t{{"a": \[1, 2\]}}', lines[2])


def test_follow_waits_for_a_topic_that_does_not_exist_yet(capsys, store_path, monkeypatch):
    Store(store_path).close()
    looks = []

    def pause(seconds: float) -> None:
        # The wait itself creates the topic: no race with a producer thread.
        looks.append(seconds)
        if len(looks) == 2:
            with Store(store_path) as store:
                store.publish_many("later", ["a", "b"])

    monkeypatch.setattr(tail_command, "pause", pause)
    code, out, err = run(capsys, "tail", store_path, "later", "--follow", "--limit", "2",
                         "--poll-ms", "1s", "--json")
    assert code == 0
    assert err == "sqliteq tail: waiting for topic 'later' to be created (Ctrl-C to stop)\n"
    assert [json.loads(line)["value"] for line in out.splitlines()] == ["a", "b"]
    assert looks == [1.0, 1.0]


def test_follow_waits_for_a_store_file_that_does_not_exist_yet(capsys, store_path, monkeypatch):
    looks = []

    def pause(seconds: float) -> None:
        # First an empty file (a creator that has not written the schema yet), then the store.
        looks.append(seconds)
        if len(looks) == 1:
            open(store_path, "wb").close()
        elif len(looks) == 2:
            with Store(store_path) as store:
                store.publish_many("later", ["a"])

    monkeypatch.setattr(tail_command, "pause", pause)
    code, out, err = run(capsys, "tail", store_path, "later", "--follow", "--limit", "1",
                         "--json")
    assert code == 0
    assert err == (f"sqliteq tail: waiting for store file {store_path!r} to be created "
                   "(Ctrl-C to stop)\n")
    assert [json.loads(line)["value"] for line in out.splitlines()] == ["a"]
    assert len(looks) == 2


def test_without_follow_a_missing_or_empty_store_file_is_an_error(capsys, store_path):
    code, out, err = run(capsys, "tail", store_path, "t")
    assert (code, out) == (1, "") and "does not exist" in err
    open(store_path, "wb").close()
    code, out, err = run(capsys, "tail", store_path, "t")
    assert (code, out) == (1, "") and "holds no store yet: it is an empty SQLite file" in err
    assert os.path.getsize(store_path) == 0


def test_without_follow_a_missing_topic_is_an_error(capsys, store_path):
    Store(store_path).close()
    code, out, err = run(capsys, "tail", store_path, "later")
    assert (code, out) == (1, "") and "topic 'later' does not exist" in err


def test_tail_group_starts_at_the_saved_offset_and_saves_it_as_it_goes(capsys, store_path):
    with Store(store_path) as store:
        store.publish_many("t", range(5))
    assert offsets(capsys, store_path, "t", "--group", "sh", "--limit", "2") == [0, 1]
    with Store(store_path) as store:
        assert store.committed_offsets("sh") == {"t": 2}
    # The saved offset wins over --from; the rest, then nothing new.
    assert offsets(capsys, store_path, "t", "--group", "sh", "--from", "0") == [2, 3, 4]
    assert offsets(capsys, store_path, "t", "--group", "sh") == []
    with Store(store_path) as store:
        [info] = store.consumers("t")
        assert (info.consumer, info.next_offset, info.lag) == ("sh", 5, 0)
    # A new group starts where --from says; a plain tail saves nothing.
    assert offsets(capsys, store_path, "t", "--group", "new", "--from", "-1") == [4]
    offsets(capsys, store_path, "t")
    with Store(store_path) as store:
        assert {c.consumer for c in store.consumers("t")} == {"sh", "new"}


def test_human_output_shows_headers(capsys, store_path):
    with Store(store_path) as store:
        store.publish_many("t", [Record("v", "k", {"trace": "a1", "src": "é"}), "plain"])
    code, out, _ = run(capsys, "tail", store_path, "t")
    first, second = out.splitlines()
    assert first.split("\t")[1].endswith(' key=k headers={"trace":"a1","src":"é"}')
    assert "headers" not in second


def test_from_past_the_end_says_where_the_topic_ends(capsys, store_path):
    with Store(store_path) as store:
        store.publish_many("t", range(5))
    code, out, err = run(capsys, "tail", store_path, "t", "--from", "99")
    assert (code, out) == (0, "")
    assert "--from 99 is past the end of topic 't': its next offset is 5" in err
    assert run(capsys, "tail", store_path, "t", "--from", "5")[2] == ""  # the end: no hint
