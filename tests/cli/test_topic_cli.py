"""topic create|config|delete and consumer reset|delete: stream management from the CLI."""

from __future__ import annotations

import re
import time

import pytest

from spark_queue.store import Record, Store
from tests.cli.cli_run import one_line_error, run, run_json, usage_error

HOUR_MS = 3_600_000


def test_topic_create_stores_retention_given_as_durations_and_rows(capsys, store_path):
    info = run_json(capsys, "topic", "create", store_path, "t", "--retention", "7d",
                    "--retention-rows", "100", "--max-payload-bytes", "64", "--create")
    assert (info["name"], info["retention_ms"], info["retention_rows"],
            info["max_payload_bytes"]) == ("t", 7 * 24 * HOUR_MS, 100, 64)
    assert isinstance(info["created_ms"], int)
    code, out, _ = run(capsys, "topic", "create", store_path, "u", "--retention", "500ms")
    assert code == 0
    assert re.search(r"^created_utc\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", out, re.M)
    # Durations read as the flags take them, so a value can be copied back.
    assert re.search(r"^retention\s+500ms$", out, re.M)
    code, out, _ = run(capsys, "topic", "config", store_path, "u", "--retention", "7d")
    assert code == 0 and re.search(r"^retention\s+7d$", out, re.M)


def test_topic_create_refuses_an_existing_topic_unless_if_not_exists(capsys, store_path):
    Store(store_path).close()
    run_json(capsys, "topic", "create", store_path, "t", "--retention-rows", "10")
    err = one_line_error(capsys, "topic", "create", store_path, "t", "--retention-rows", "5")
    assert "topic 't' already exists" in err and "sqliteq topic config" in err
    again = run_json(capsys, "topic", "create", store_path, "t", "--retention-rows", "5",
                     "--if-not-exists")
    assert again["retention_rows"] == 10  # left as it was


def test_topic_config_changes_only_the_settings_given(capsys, store_path):
    Store(store_path).close()
    run_json(capsys, "topic", "create", store_path, "t", "--retention", "1h",
             "--retention-rows", "10", "--max-payload-bytes", "64")
    info = run_json(capsys, "topic", "config", store_path, "t", "--retention", "30m")
    assert (info["retention_ms"], info["retention_rows"], info["max_payload_bytes"]) == (
        1_800_000, 10, 64)
    info = run_json(capsys, "topic", "config", store_path, "t", "--no-retention-rows",
                    "--no-max-payload-bytes")
    assert (info["retention_ms"], info["retention_rows"], info["max_payload_bytes"]) == (
        1_800_000, None, None)
    info = run_json(capsys, "topic", "config", store_path, "t", "--no-retention")
    assert info["retention_ms"] is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["topic", "config", "{s}", "nope"], "topic 'nope' does not exist"),
        (["topic", "config", "{s}", "t", "--retention", "1h", "--no-retention"],
         "give --retention or --no-retention, not both"),
        (["topic", "delete", "{s}", "nope", "--yes"], "topic 'nope' does not exist"),
        (["consumer", "delete", "{s}", "ghost"],
         "consumer 'ghost' has no saved offsets; list consumers with `sqliteq consumers {s}`"),
        (["consumer", "reset", "{s}", "ghost", "--to-earliest"],
         "consumer 'ghost' has no saved offsets; name the topic"),
        (["consumer", "reset", "{s}", "c", "--topic", "nope", "--to-latest"],
         "topic 'nope' does not exist"),
    ],
)
def test_topic_and_consumer_misuse_gets_one_line_naming_the_fix(capsys, store_path, argv,
                                                                message):
    Store(store_path).close()
    err = one_line_error(capsys, *[a.format(s=store_path) for a in argv])
    assert message.format(s=store_path) in err


@pytest.mark.parametrize(
    ("argv", "flag", "value"),
    [
        (["topic", "create", "{s}", "t", "--retention", "1w"], "--retention", "'1w'"),
        (["topic", "config", "{s}", "t", "--retention", "0"], "--retention", "0"),
        (["topic", "create", "{s}", "t", "--retention-rows", "0"], "--retention-rows", "0"),
        (["prune", "{s}", "--retention", "old"], "--retention/--max-age", "'old'"),
        (["prune", "{s}", "--max-age", "old"], "--retention/--max-age", "'old'"),
        (["tail", "{s}", "t", "--since", "yesterday"], "--since", "'yesterday'"),
        (["tail", "{s}", "t", "--poll-ms", "fast"], "--poll-ms", "'fast'"),
        (["consumer", "reset", "{s}", "c", "--topic", "t", "--to-time", "never"],
         "--to-time", "'never'"),
        (["queue", "config", "{s}", "q", "--backoff-cap-ms", "5 mins!"],
         "--backoff-cap-ms", "'5 mins!'"),
    ],
)
def test_a_bad_duration_or_time_names_the_flag_the_value_and_what_is_allowed(
    capsys, store_path, argv, flag, value
):
    with Store(store_path) as store:
        store.publish("t", "x")
    last = usage_error(capsys, *[a.format(s=store_path) for a in argv])
    assert f"argument {flag}" in last and f"got {value}" in last
    if value.startswith("'"):  # text that is no duration: an example of what is allowed
        assert "10m" in last or "500ms" in last
    with Store(store_path) as store:
        info = store.topics()[0]
        assert (info.retention_ms, info.count, store.consumers()) == (None, 1, [])


def test_topic_delete_without_yes_says_what_would_go_and_deletes_nothing(capsys, store_path):
    with Store(store_path) as store:
        store.publish_many("t", range(5))
        store.commit_offsets("spark-job", {"t": 3})
    err = one_line_error(capsys, "topic", "delete", store_path, "t")
    assert "with its 5 event(s) and the saved offsets of 1 consumer(s) (spark-job)" in err
    assert "--yes" in err
    with Store(store_path) as store:
        assert store.topic("t").bounds() == (0, 5)
        assert store.committed_offsets("spark-job") == {"t": 3}


def test_topic_delete_with_yes_removes_events_and_saved_offsets_only_of_that_topic(
    capsys, store_path
):
    with Store(store_path) as store:
        store.publish_many("t", range(5))
        store.publish_many("keep", range(2))
        store.commit_offsets("c", {"t": 3, "keep": 1})
    result = run_json(capsys, "topic", "delete", store_path, "t", "--yes")
    assert result == {"topic": "t", "deleted_events": 5, "deleted_consumers": ["c"]}
    with Store(store_path) as store:
        assert [t.name for t in store.topics()] == ["keep"]
        assert store.committed_offsets("c") == {"keep": 1}


def test_prune_takes_its_max_age_as_a_duration(capsys, store_path):
    now = time.time_ns() // 1_000_000
    with Store(store_path) as store:
        store.publish_many("t", [Record(i, timestamp_ms=now - (3 - i) * HOUR_MS)
                                 for i in range(3)] + [Record(3)])
    [result] = run_json(capsys, "prune", store_path, "--max-age", "90m")
    assert (result["deleted"], result["earliest_after"]) == (2, 2)
    [result] = run_json(capsys, "prune", store_path, "--max-age-ms", str(HOUR_MS // 2))
    assert result["earliest_after"] == 3


def _reset(capsys, store_path, *flags: str) -> dict:
    [row] = run_json(capsys, "consumer", "reset", store_path, "c", "--topic", "t", *flags)
    return row


def test_consumer_reset_moves_the_saved_offset_both_ways_within_the_topic(capsys, store_path):
    with Store(store_path) as store:
        store.publish_many("t", range(10))
        store.topic("t").prune(retention_rows=7)  # earliest 3
        store.commit_offsets("c", {"t": 5})
    row = _reset(capsys, store_path, "--to-earliest")
    assert (row["before"], row["next_offset"], row["earliest"], row["latest"], row["lag"]) == (
        5, 3, 3, 10, 7)
    assert _reset(capsys, store_path, "--to-latest")["next_offset"] == 10
    assert _reset(capsys, store_path, "--to-offset", "4")["next_offset"] == 4
    for outside in ("2", "11"):
        err = one_line_error(capsys, "consumer", "reset", store_path, "c", "--topic", "t",
                             "--to-offset", outside)
        assert f"--to-offset {outside} is outside topic 't'" in err
        assert "give an offset from 3 to 10" in err
    with Store(store_path) as store:
        assert store.committed_offsets("c") == {"t": 4}


def test_consumer_reset_to_a_time_finds_the_first_event_at_or_after_it(capsys, store_path):
    now = time.time_ns() // 1_000_000
    stamps = [now - 3 * HOUR_MS, now - 2 * HOUR_MS, now - HOUR_MS // 2, now]
    with Store(store_path) as store:
        store.publish_many("t", [Record(i, timestamp_ms=ts) for i, ts in enumerate(stamps)])
    assert _reset(capsys, store_path, "--to-time", "90m")["next_offset"] == 2
    assert _reset(capsys, store_path, "--to-time", str(stamps[1]))["next_offset"] == 1
    assert _reset(capsys, store_path, "--to-time", "2000-01-01T00:00:00Z")["next_offset"] == 0
    assert _reset(capsys, store_path, "--to-time", "2999-01-01T00:00:00+02:00")[
        "next_offset"] == 4  # after every event: latest


def test_consumer_reset_without_topic_resets_every_topic_it_has(capsys, store_path):
    with Store(store_path) as store:
        store.publish_many("a", range(4))
        store.publish_many("b", range(6))
        store.publish_many("other", range(2))
        store.commit_offsets("c", {"a": 1, "b": 2})
    rows = run_json(capsys, "consumer", "reset", store_path, "c", "--to-latest")
    assert [(r["topic"], r["before"], r["next_offset"]) for r in rows] == [
        ("a", 1, 4), ("b", 2, 6)]


def test_consumer_delete_lets_retention_go_past_an_abandoned_consumer(capsys, store_path):
    with Store(store_path) as store:
        store.publish_many("t", range(10))
        store.publish_many("u", range(3))
        store.commit_offsets("abandoned", {"t": 2, "u": 1})
    assert run_json(capsys, "consumer", "delete", store_path, "abandoned", "--topic", "t") == {
        "consumer": "abandoned", "topic": "t", "deleted_offsets": 1}
    [result] = run_json(capsys, "prune", store_path, "--topic", "t", "--max-rows", "4")
    assert (result["deleted"], result["held_by"]) == (6, None)
    assert run_json(capsys, "consumer", "delete", store_path, "abandoned")["deleted_offsets"] == 1
    with Store(store_path) as store:
        assert store.consumers() == []


def test_queue_config_reads_its_millisecond_settings_as_durations(capsys, store_path):
    Store(store_path).close()
    config = run_json(capsys, "queue", "config", store_path, "q", "--visibility-timeout-ms",
                      "30s", "--backoff-cap-ms", "5m", "--idempotency-window-ms", "1d",
                      "--backoff-base-ms", "250")
    assert (config["visibility_timeout_ms"], config["backoff_cap_ms"],
            config["idempotency_window_ms"], config["backoff_base_ms"]) == (
        30_000, 300_000, 86_400_000, 250)
    added = run_json(capsys, "queue", "add", store_path, "q", "v", "--delay-ms", "2s")
    with Store(store_path) as store:
        [job] = store.queue("q").peek(10)
    assert job.id == added["id"] and job.state == "delayed"
