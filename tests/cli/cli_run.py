"""Running ``sqliteq`` in process for the CLI tests: exit code, stdout and stderr."""

from __future__ import annotations

import json

import pytest

from spark_queue.cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def one_line_error(capsys, *argv: str) -> str:
    """Exit 1, nothing on stdout, one line on stderr (returned)."""
    code, out, err = run(capsys, *argv)
    assert (code, out) == (1, ""), err
    assert err.count("\n") == 1, err
    return err


def usage_error(capsys, *argv: str) -> str:
    """argparse's usage block and exit 2; returns its last line (the one naming the flag)."""
    with pytest.raises(SystemExit) as raised:
        main(list(argv))
    out, err = capsys.readouterr()
    assert (raised.value.code, out) == (2, ""), err
    assert err.startswith("usage: sqliteq ")
    return err.strip().splitlines()[-1]


def existing(path: str) -> str:
    """A store at ``path`` with topic ``t`` and queue ``q``: what writes without --create need."""
    from spark_queue.store import Store

    with Store(path) as store:
        store.topic("t").create()
        store.queue("q").configure()
    return path
