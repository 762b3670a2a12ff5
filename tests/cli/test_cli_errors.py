"""Bad input to sqliteq: exit 1 with one line `sqliteq COMMAND: message`, or argparse's
usage block with exit 2 for a usage error; never a traceback."""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import pytest

from spark_queue.cli import main
from spark_queue.store import Store
from tests.cli.cli_run import run

HUGE = "99999999999999999999999"


@pytest.fixture
def files(tmp_path, store_path):
    with Store(store_path) as store:
        store.publish("t", "v")
        store.queue("q").enqueue("job")
    (tmp_path / "latin1.ndjson").write_bytes(b'{"a": 1}\n"caf\xe9"\n')
    (tmp_path / "bad.toml").write_text("events = [unclosed\n")
    (tmp_path / "dir").mkdir()
    return {"store": store_path, "dir": str(tmp_path / "dir"), "tmp": str(tmp_path)}


# (argv, the flag or value the error line names)
USAGE_ERRORS = [
    (["tail", "{store}", "t", "-f", "--poll-ms", "-5"], "--poll-ms"),
    (["tail", "{store}", "t", "--limit", "-1"], "--limit"),
    (["dlq", "list", "{store}", "q", "--limit", "-1"], "--limit"),
    (["queue", "peek", "{store}", "q", "--limit", "-1"], "--limit"),
    (["queue", "add", "{store}", "q", "v", "--priority", HUGE], "--priority"),
    (["queue", "add", "{store}", "q", "v", "--delay-ms", HUGE], "--delay-ms"),
    (["queue", "add", "{store}", "q", "v", "--delay-ms", "-1"], "--delay-ms"),
    (["queue", "add", "{store}", "q", "v", "--ttl-ms", "0"], "--ttl-ms"),
    (["queue", "add", "{store}", "q", "v", "--max-attempts", "0"], "--max-attempts"),
    (["queue", "add", "{store}", "q", "v", "--wait-ms", "-1"], "--wait-ms"),
    (["queue", "add", "{store}", "q", "--ndjson", "-", "--batch-size", "0"], "--batch-size"),
    (["publish", "{store}", "t", "--ndjson", "-", "--batch-size", "-3"], "--batch-size"),
    (["queue", "config", "{store}", "q", "--visibility-timeout-ms", HUGE],
     "--visibility-timeout-ms"),
    (["queue", "config", "{store}", "q", "--max-size", "0"], "--max-size"),
    (["queue", "config", "{store}", "q", "--rate-limit-per-s", "nan"], "--rate-limit-per-s"),
    (["queue", "config", "{store}", "q", "--rate-limit-per-s", "-2"], "--rate-limit-per-s"),
    (["prune", "{store}", "--max-age-ms", HUGE], "--max-age-ms"),
    (["prune", "{store}", "--max-rows", "-1"], "--max-rows"),
    (["job", "get", "{store}", "q", HUGE], "argument id"),
    (["job", "remove", "{store}", "q", "0"], "argument id"),
    (["dlq", "requeue", "{store}", "q", HUGE], "argument ids"),
    (["worker", "{store}", "m:f", "--queue", "q", "--lease-ms", HUGE], "--lease-ms"),
    (["worker", "{store}", "m:f", "--queue", "q", "--heartbeat-ms", HUGE], "--heartbeat-ms"),
    (["worker", "{store}", "m:f", "--queue", "q", "--grace-ms", HUGE], "--grace-ms"),
    (["worker", "{store}", "m:f", "--queue", "q", "--idle-poll-max-ms", "0"],
     "--idle-poll-max-ms"),
    (["worker", "{store}", "m:f", "--queue", "q", "--concurrency", "0"], "--concurrency"),
    (["demo", "--events", "-1"], "--events"),
    (["demo", "--duration", "inf"], "--duration"),
    (["tail", "{store}"], "topic"),
    (["tial", "{store}", "t"], "unknown command 'tial'. Did you mean tail?"),
    (["-v", "qeueu", "list"], "Did you mean queue or queues?"),
    (["tail", "{store}", "t", "--from", "soon"], "--from"),
    (["tail", "{store}", "t", "--from", "99999999999999999999"], "--from"),
    (["tail", "{store}", "t", "--from", "-99999999999999999999"], "--from"),
    (["tail", "{store}", "t", "--since", "99999999999999999999"], "--since"),
    (["consumer", "reset", "{store}", "c", "--topic", "t", "--to-time",
      "99999999999999999999"], "--to-time"),
    (["publish", "{store}", "t", "v", "--no-such-flag"], "--no-such-flag"),
]


def _id(value):
    return " ".join(value)[:60] if isinstance(value, list) else str(value)


@pytest.mark.parametrize(("argv", "names"), USAGE_ERRORS, ids=_id)
def test_usage_errors_exit_2_with_argparse_usage_and_a_last_line_naming_the_argument(
    capsys, files, argv, names
):
    argv = [a.format(**files) for a in argv]
    with pytest.raises(SystemExit) as raised:
        main(argv)
    _, err = capsys.readouterr()
    assert raised.value.code == 2
    assert err.startswith("usage: sqliteq ")
    last = err.strip().splitlines()[-1]
    # An unknown flag is refused by the top-level parser: `sqliteq: error: ...`.
    assert last.startswith("sqliteq") and ": error: " in last and names in last
    assert "Traceback" not in err


# (argv, a fragment of the one error line)
ERRORS = [
    (["publish", "{dir}", "t", "v"], "is a directory"),
    (["queue", "add", "{dir}", "q", "v"], "is a directory"),
    (["publish", "{store}", "t", "--ndjson", "{tmp}/latin1.ndjson"], "line 2 is not UTF-8"),
    (["queue", "add", "{store}", "q", "--ndjson", "{tmp}/latin1.ndjson"], "line 2 is not UTF-8"),
    (["publish", "{store}", "t", "--ndjson", "{tmp}/missing.ndjson"], "cannot read --ndjson"),
    (["demo", "--config", "{tmp}/bad.toml"], "is not valid TOML"),
    (["demo", "--config", "{tmp}/missing.toml"], "is not a file"),
    (["publish", "{tmp}/typo.sqllite", "t", "v"], "sqliteq init"),
    (["queue", "add", "{tmp}/typo.sqllite", "q", "v"], "--create"),
    (["queue", "config", "{tmp}/typo.sqllite", "q", "--max-size", "3"], "does not exist"),
    (["init", "{tmp}/no/such/dir/a.sqlite"], "does not exist"),
    (["publish", "{store}", "t", "{{", "--value-format", "json"], "VALUE is not valid JSON"),
    (["publish", "{store}", "t", "NaN", "--value-format", "json"], "NaN is not standard JSON"),
    (["publish", "{store}", "t", "v", "--header", "a=1", "--header", "a=2"],
     "--header 'a' is given twice"),
    (["worker", "{store}", "os:getcwd", "--queue", "typo"], "queue 'typo' does not exist"),
    (["tail", "{store}", "nope"], "nope"),
    (["job", "get", "{store}", "q", "12345"], "12345"),
    (["queue", "pause", "{store}", "typo"], "queue 'typo' does not exist"),
]


@pytest.mark.parametrize(("argv", "fragment"), ERRORS, ids=_id)
def test_errors_exit_1_with_one_line_naming_the_command_and_the_value(
    capsys, files, argv, fragment
):
    argv = [a.format(**files) for a in argv]
    code, out, err = run(capsys, *argv)
    command = " ".join(argv[:2]) if argv[0] in ("queue", "dlq", "job", "topic") else argv[0]
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"sqliteq {command}: "), err
    assert fragment.format(**files) in err
    assert not os.path.exists(os.path.join(files["tmp"], "typo.sqllite"))
    assert not os.path.exists(os.path.join(files["tmp"], "no"))


def test_write_commands_on_a_read_only_store_exit_1_with_one_line_and_write_nothing(
    capsys, files, monkeypatch
):
    # Root ignores file modes, so the store is opened read-only the way a read-only
    # file or mount makes SQLite open it.
    monkeypatch.setattr("spark_queue.store.Store", functools.partial(Store, readonly=True))
    path = files["store"]
    for argv in (
        ["publish", path, "t", "v"],
        ["queue", "add", path, "q", "v"],
        ["queue", "config", path, "q", "--max-size", "5"],
        ["queue", "pause", path, "q"],
        ["queue", "purge", path, "q"],
        ["job", "remove", path, "q", "1"],
        ["prune", path, "--retention", "1", "--force"],
    ):
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == "" and err.count("\n") == 1, (argv, err)
        assert "cannot be written" in err and "Traceback" not in err
    monkeypatch.undo()
    with Store(path) as store:
        assert store.topic("t").bounds() == (0, 1) and store.queue("q").stats().ready == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
def test_a_read_only_store_file_refuses_writes_with_one_line(capsys, files):
    os.chmod(files["store"], 0o444)
    code, _, err = run(capsys, "publish", files["store"], "t", "v")
    assert code == 1 and err.count("\n") == 1 and "cannot be written" in err


def test_an_unexpected_exception_is_one_line_saying_it_is_a_bug(capsys, files, monkeypatch):
    def broken(self, *args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(Store, "topics", broken)
    code, out, err = run(capsys, "topics", files["store"])
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("sqliteq topics: unexpected ZeroDivisionError: division by zero")
    assert "-v" in err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["tail", "{store}", "t", "-f", "--poll-ms", "-5"], 2),
        (["queue", "add", "{store}", "q", "v", "--priority", HUGE], 2),
        (["publish", "{dir}", "t", "v"], 1),
        (["publish", "{store}", "t", "--ndjson", "{tmp}/latin1.ndjson"], 1),
        (["demo", "--config", "{tmp}/bad.toml"], 1),
        (["publish", "{tmp}/typo.sqllite", "t", "v"], 1),
    ],
    ids=_id,
)
def test_no_bad_input_prints_a_traceback_in_a_real_process(files, argv, code):
    argv = [a.format(**files) for a in argv]
    proc = subprocess.run(
        [sys.executable, "-m", "spark_queue", *argv], capture_output=True, text=True,
        timeout=120,
    )
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert proc.stderr.strip().splitlines()[-1].startswith(f"sqliteq {argv[0]}")
    if code == 1:
        assert proc.stderr.count("\n") == 1
