"""topic schema set|show, the schema in `topics`, and `sqliteq publish` held to it."""

from __future__ import annotations

from spark_queue.store import Store
from tests.cli.cli_run import one_line_error, run_json, usage_error

DDL = "device STRING NOT NULL, temp DOUBLE"


def test_schema_set_show_and_topics_list_the_version(capsys, store_path):
    schema = run_json(capsys, "topic", "schema", "set", store_path, "t", DDL, "--create")
    assert (schema["topic"], schema["version"], schema["ddl"], schema["on_invalid"],
            schema["compatibility"]) == ("t", 1, DDL, "reject", "backward")
    assert run_json(capsys, "topic", "schema", "show", store_path, "t")["ddl"] == DDL
    [row] = run_json(capsys, "topics", store_path)
    assert row["schema_version"] == 1
    run_json(capsys, "topic", "schema", "set", store_path, "t", DDL + ", site STRING")
    history = run_json(capsys, "topic", "schema", "show", store_path, "t", "--history")
    assert [v["version"] for v in history] == [1, 2]


def test_publish_refuses_an_event_that_does_not_fit_and_writes_nothing(capsys, store_path):
    run_json(capsys, "topic", "schema", "set", store_path, "t", DDL, "--create")
    for value, message in [
        ('{"device": "a", "temp": "21.5"}', "field temp must be DOUBLE (a JSON number); got "
                                            'text "21.5"'),
        ('{"temp": 21.5}', "field device must be STRING (a JSON string); got nothing"),
        ("{not json", "the value is not JSON text"),
    ]:
        err = one_line_error(capsys, "publish", store_path, "t", value)
        assert err.startswith("sqliteq publish: topic 't' (schema version 1): item 0")
        assert message in err
    assert run_json(capsys, "publish", store_path, "t", '{"device": "a", "temp": 2}') == {
        "topic": "t", "offset": 0}
    with Store(store_path) as store:
        assert [e.value for e in store.read("t")] == [{"device": "a", "temp": 2}]


def test_an_incompatible_change_is_refused_naming_field_and_rule(capsys, store_path):
    run_json(capsys, "topic", "schema", "set", store_path, "t", DDL, "--create")
    err = one_line_error(capsys, "topic", "schema", "set", store_path, "t", "device INT")
    assert "field device changes type from STRING to INT (rule: backward" in err
    changed = run_json(capsys, "topic", "schema", "set", store_path, "t", "device INT",
                       "--compatibility", "none")
    assert changed["version"] == 2


def test_bad_ddl_names_its_position_and_an_unknown_topic_is_refused(capsys, store_path):
    run_json(capsys, "topic", "create", store_path, "t", "--create")
    err = one_line_error(capsys, "topic", "schema", "set", store_path, "t", "a INTT")
    assert "unknown type 'INTT' at position 2" in err
    err = one_line_error(capsys, "topic", "schema", "set", store_path, "nope", DDL)
    assert "nope" in err
    assert "invalid choice" in usage_error(capsys, "topic", "schema", "set", store_path, "t",
                                           DDL, "--on-invalid", "drop")
    assert run_json(capsys, "topic", "schema", "show", store_path, "t")["version"] is None


def test_quarantine_from_the_cli_publish_list_show_replay_purge(capsys, store_path):
    run_json(capsys, "topic", "schema", "set", store_path, "t", DDL, "--on-invalid",
             "quarantine", "--create")
    answer = run_json(capsys, "publish", store_path, "t", '{"device": "a", "temp": "hot"}')
    assert answer["quarantined"] is True and "field temp must be DOUBLE" in answer["reason"]
    assert run_json(capsys, "publish", store_path, "t", '{"device": "a"}')["offset"] == 0
    [row] = run_json(capsys, "topic", "quarantine", "list", store_path, "t")
    assert (row["id"], row["next_offset"], row["writer"]) == (answer["quarantine_id"], 0,
                                                             "python")
    shown = run_json(capsys, "topic", "quarantine", "show", store_path, "t", str(row["id"]))
    assert shown["value"] == '{"device":"a","temp":"hot"}'  # as publish stored it (JSON)
    assert "no quarantined event 99" in one_line_error(
        capsys, "topic", "quarantine", "show", store_path, "t", "99")
    assert run_json(capsys, "topic", "quarantine", "replay", store_path, "t") == {
        "topic": "t", "replayed": 0, "offsets": [], "still_invalid": [row["id"]]}
    run_json(capsys, "topic", "schema", "set", store_path, "t", "device STRING NOT NULL",
             "--compatibility", "none", "--on-invalid", "quarantine")
    assert run_json(capsys, "topic", "quarantine", "replay", store_path, "t", "--id",
                    str(row["id"]))["offsets"] == [1]
    assert run_json(capsys, "topic", "quarantine", "purge", store_path, "t") == {
        "topic": "t", "purged": 0}
    with Store(store_path) as store:
        assert [e.value for e in store.read("t")] == [{"device": "a"},
                                                      {"device": "a", "temp": "hot"}]


def test_schema_show_json_schema_prints_a_registrable_document(capsys, store_path):
    import json

    from tests.cli.cli_run import run

    run_json(capsys, "topic", "schema", "set", store_path, "t", DDL + " COMMENT 'C'",
             "--create")
    code, out, _ = run(capsys, "topic", "schema", "show", store_path, "t", "--json-schema")
    assert code == 0
    assert json.loads(out) == {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "t",
        "type": "object", "required": ["device"],
        "properties": {"device": {"type": "string"},
                       "temp": {"type": ["number", "null"], "description": "C"}}}
    run_json(capsys, "topic", "create", store_path, "plain")
    assert "declares no schema" in one_line_error(capsys, "topic", "schema", "show", store_path,
                                                  "plain", "--json-schema")
