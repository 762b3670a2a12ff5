"""Each queue and topic setting is declared once (spark_queue/setting_table.py); what cannot
read that declaration is held to it here: the schema's column defaults and CHECKs, the
static types, the CLI's flags and the docs' tables. A setting added, renamed or
re-defaulted in one place and not the other fails one of these."""

from __future__ import annotations

import argparse
import pathlib
from typing import get_args, get_type_hints

import apsw
import pytest

from spark_queue.cli import build_parser
from spark_queue.errors import OptionError, QueueConfigError
from spark_queue.setting_table import (
    QUEUE_SETTINGS,
    STORE_SETTINGS,
    TOPIC_SETTINGS,
    Setting,
    markdown_table,
)
from spark_queue.store import QueueConfig, Store
from spark_queue.store.queues.queue_config import CONFIG_COLUMNS, QueueSettings, config_from_row

ROOT = pathlib.Path(__file__).resolve().parents[1]
TABLES = {"sq_queues": QUEUE_SETTINGS, "sq_topics": TOPIC_SETTINGS}


@pytest.fixture
def conn(tmp_path):
    path = str(tmp_path / "s.sqlite")
    Store(path).close()  # created and migrated to the newest schema
    connection = apsw.Connection(path)
    yield connection
    connection.close()


def columns(conn: apsw.Connection, table: str) -> dict[str, tuple[bool, str | None]]:
    """column -> (NOT NULL, its DEFAULT as SQL text)."""
    return {
        name: (bool(notnull), default)
        for _, name, _, notnull, default, _ in conn.execute(f"PRAGMA table_info({table})")
    }


@pytest.mark.parametrize("table", TABLES)
def test_the_schema_column_defaults_are_the_declared_defaults(conn, table):
    found = columns(conn, table)
    for s in TABLES[table]:
        assert s.name in found, f"{table} has no column {s.name}"
        notnull, default = found[s.name]
        if s.default is None:
            assert (notnull, default) == (False, None), s.name
        else:
            assert notnull and default is not None, s.name
            assert s.kind(int(default)) == s.default, s.name


def lowest_refused(s: Setting) -> object:
    if s.kind is bool:
        return 2
    return s.low if s.kind is float else s.low - 1


@pytest.mark.parametrize("table", TABLES)
def test_the_schema_checks_refuse_what_the_declaration_refuses(conn, table):
    conn.execute(f"INSERT INTO {table} (name, created_ms) VALUES ('x', 0)")
    for s in TABLES[table]:
        with pytest.raises(apsw.ConstraintError):
            conn.execute(f"UPDATE {table} SET {s.name} = ? WHERE name = 'x'", (lowest_refused(s),))
        if s.kind is not bool:
            lowest = s.low + 1 if s.kind is float else s.low
            conn.execute(f"UPDATE {table} SET {s.name} = ? WHERE name = 'x'", (lowest,))


def test_a_new_queue_has_the_declared_defaults(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        config = store.queue("q").configure()
    assert {s.name: getattr(config, s.name) for s in QUEUE_SETTINGS} == {
        s.name: s.default for s in QUEUE_SETTINGS
    }


def test_the_typed_settings_name_and_type_the_declared_settings():
    # QueueSettings types Store.queue(**settings) and Queue.configure for mypy; QueueConfig
    # is the row read back: neither can be built from the table, both must match it.
    hints = get_type_hints(QueueSettings)
    assert list(hints) == [s.name for s in QUEUE_SETTINGS]
    for s in QUEUE_SETTINGS:
        kinds = set(get_args(hints[s.name])) or {hints[s.name]}
        assert kinds - {type(None)} == {s.kind}, s.name
        assert (type(None) in kinds) == s.nullable, s.name
    assert {s.name for s in QUEUE_SETTINGS} <= set(QueueConfig._fields)


def setting_flags(command: str, sub: str) -> set[str]:
    parser = build_parser()
    chosen = argparse.ArgumentParser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices[command]
    for action in chosen._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices[sub]
    return {flag for action in chosen._actions for flag in action.option_strings}


@pytest.mark.parametrize(
    ("command", "sub", "settings", "clearable"),
    [("queue", "config", QUEUE_SETTINGS, True), ("queue", "create", QUEUE_SETTINGS, False),
     ("topic", "config", TOPIC_SETTINGS, True), ("topic", "create", TOPIC_SETTINGS, False)],
)
def test_the_cli_flags_are_the_declared_flags(command, sub, settings, clearable):
    flags = setting_flags(command, sub)
    declared = {s.flag for s in settings if s.flag} | (
        {s.off_flag for s in settings if s.off_flag} if clearable else set()
    )
    assert declared <= flags
    # No flag for a setting that is not declared: every --no-... is a declared one.
    assert {f for f in flags if f.startswith("--no-")} == (
        {s.off_flag for s in settings if s.off_flag} if clearable else set()
    )


@pytest.mark.parametrize(
    ("page", "settings"),
    [("docs/queues.md", QUEUE_SETTINGS), ("docs/store.md", TOPIC_SETTINGS),
     ("docs/operations.md", STORE_SETTINGS)],
)
def test_the_docs_settings_table_is_the_declaration(page, settings):
    assert markdown_table(settings) in (ROOT / page).read_text(encoding="utf-8"), (
        f"{page}'s settings table differs from spark_queue/setting_table.py; paste "
        "markdown_table() of it"
    )


def test_the_housekeeping_flags_are_the_store_settings_flags():
    flags = setting_flags("housekeeping", None)
    assert {s.flag for s in STORE_SETTINGS} | {s.off_flag for s in STORE_SETTINGS} <= flags


def test_one_check_refuses_a_setting_alike_for_queues_and_topics(tmp_path):
    """setting_table.check_setting is the one check of a setting's value: a queue's and a topic's
    max_payload_bytes are refused in the same words (the caller's error class and owner
    aside), and topic retention goes through it too."""
    with Store(str(tmp_path / "s.sqlite")) as store:
        with pytest.raises(QueueConfigError) as queue_error:
            store.queue("q", max_payload_bytes=0)
        with pytest.raises(OptionError) as topic_error:
            store.topic("t").configure(max_payload_bytes=0)
        with pytest.raises(OptionError, match=r"^retention retention_rows must be an integer "
                           r"from 1 to 2\*\*62 - 1 or None \(no limit\); got 0\.$"):
            store.topic("t").configure(retention_rows=0)
        assert store.topics() == [] and [c.name for c in store.queues()] == []
    said = "max_payload_bytes must be an integer from 1 to 2**62 - 1 or None (no limit); got 0."
    assert str(queue_error.value) == f"queue 'q' setting {said}"
    assert str(topic_error.value) == f"topic 't' {said}"


def test_a_queue_row_is_read_by_its_column_names(conn):
    """CONFIG_COLUMNS names QueueConfig's fields in order, so every field is read from the
    column of its name (a field added to QueueConfig is read with it)."""
    conn.execute("INSERT INTO sq_queues (name, created_ms, paused, max_leased) "
                 "VALUES ('q', 7, 1, 3)")
    row = conn.execute(f"SELECT {CONFIG_COLUMNS} FROM sq_queues").fetchone()
    names = [d[0] for d in conn.execute(f"SELECT {CONFIG_COLUMNS} FROM sq_queues").description]
    config = config_from_row(row)
    assert names == list(QueueConfig._fields)
    assert (config.name, config.created_ms, config.paused, config.max_leased) == ("q", 7, True, 3)
