"""A typo never creates a topic or queue (#26): writes to an unknown name are refused with
the closest names, and every command on an unknown name points to the command that lists them."""

from __future__ import annotations

import pytest

from spark_queue.store import Store
from tests.cli.cli_run import one_line_error, run, run_json


@pytest.fixture
def app(store_path):
    with Store(store_path) as store:
        store.publish("orders", "o")
        store.queue("thumbnails").enqueue("job")
    return store_path


def _names(path: str) -> tuple[list[str], list[str]]:
    with Store(path, create=False) as store:
        return [t.name for t in store.topics()], [q.name for q in store.queues()]


def test_a_write_to_an_unknown_topic_or_queue_creates_nothing_and_names_the_closest(
    capsys, app
):
    before = _names(app)
    err = one_line_error(capsys, "queue", "add", app, "thumbnail", '{"img": 1}')
    assert "queue 'thumbnail' does not exist" in err and "did you mean 'thumbnails'?" in err
    assert f"`sqliteq queues {app}`" in err and f"`sqliteq queue create {app} thumbnail`" in err
    assert "--create" in err
    err = one_line_error(capsys, "publish", app, "order", "v")
    assert "topic 'order' does not exist" in err and "did you mean 'orders'?" in err
    assert f"`sqliteq topics {app}`" in err and f"`sqliteq topic create {app} order`" in err
    err = one_line_error(capsys, "topic", "config", app, "order", "--retention", "1d")
    assert "did you mean 'orders'?" in err
    err = one_line_error(capsys, "queue", "add", app, "zzz", "--ndjson", "-")
    assert "queue 'zzz' does not exist" in err and "did you mean" not in err
    assert _names(app) == before  # nothing created

    # Asked for: --create on the command, or the commands that create.
    assert run(capsys, "queue", "add", app, "thumbnail", "1", "--create")[0] == 0
    assert run(capsys, "publish", app, "order", "v", "--create")[0] == 0
    assert run(capsys, "topic", "config", app, "audit", "--retention", "1d", "--create")[0] == 0
    assert run(capsys, "topic", "create", app, "clicks")[0] == 0
    assert run(capsys, "queue", "config", app, "emails", "--max-attempts", "3")[0] == 0
    topics, queues = _names(app)
    assert sorted(topics) == ["audit", "clicks", "order", "orders"]
    assert sorted(queues) == ["emails", "thumbnail", "thumbnails"]


@pytest.mark.parametrize(
    ("argv", "lister"),
    [
        (["tail", "{p}", "order"], "sqliteq topics"),
        (["consumers", "{p}", "--topic", "order"], "sqliteq topics"),
        (["prune", "{p}", "--topic", "order"], "sqliteq topics"),
        (["topic", "delete", "{p}", "order", "--yes"], "sqliteq topics"),
        (["consumer", "reset", "{p}", "c", "--topic", "order", "--to-earliest"],
         "sqliteq topics"),
        (["queue", "show", "{p}", "thumbnail"], "sqliteq queues"),
        (["queue", "peek", "{p}", "thumbnail"], "sqliteq queues"),
        (["queue", "stats", "{p}", "thumbnail"], "sqliteq queues"),
        (["queue", "pause", "{p}", "thumbnail"], "sqliteq queues"),
        (["queue", "resume", "{p}", "thumbnail"], "sqliteq queues"),
        (["queue", "purge", "{p}", "thumbnail"], "sqliteq queues"),
        (["dlq", "list", "{p}", "thumbnail"], "sqliteq queues"),
        (["dlq", "requeue", "{p}", "thumbnail"], "sqliteq queues"),
        (["dlq", "purge", "{p}", "thumbnail"], "sqliteq queues"),
        (["job", "get", "{p}", "thumbnail", "1"], "sqliteq queues"),
        (["job", "remove", "{p}", "thumbnail", "1"], "sqliteq queues"),
    ],
    ids=lambda v: " ".join(v[:2]) if isinstance(v, list) else v,
)
def test_every_command_on_an_unknown_name_points_to_the_listing_command(
    capsys, app, argv, lister
):
    before = _names(app)
    err = one_line_error(capsys, *[a.format(p=app) for a in argv])
    assert "does not exist" in err and "did you mean" in err and f"`{lister} {app}`" in err
    assert _names(app) == before


def test_sqliteq_queues_lists_queues_as_queue_list_does(capsys, app):
    def rows(*command: str) -> list[dict]:
        return [row | {"oldest_ready_age_ms": None} for row in run_json(capsys, *command, app)]

    assert rows("queues") == rows("queue", "list")
    code, out, _ = run(capsys, "queues", app)
    assert code == 0 and out.splitlines()[1].split()[0] == "thumbnails"


def test_a_missing_store_file_gets_a_cli_hint_and_the_files_beside_it(capsys, tmp_path):
    Store(str(tmp_path / "app.sqlite")).close()
    typo = str(tmp_path / "ap.sqlite")
    for argv in (["topics", typo], ["queue", "list", typo], ["tail", typo, "t"]):
        err = one_line_error(capsys, *argv)
        assert f"store file {typo!r} does not exist" in err
        assert f"did you mean {str(tmp_path / 'app.sqlite')!r}?" in err
        assert f"`sqliteq init {typo}`" in err and "create=True" not in err
