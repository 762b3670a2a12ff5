"""The pytest plugin (entry point ``pytest11``): the fixtures ``sqliteq_store`` and
``sqliteq_spark``, the marker ``sqliteq_both`` and the options ``--sqliteq-remote`` and
``--sqliteq-both``.

Loading it costs nothing: no pyspark until a test asks for ``sqliteq_spark``, so a run that
only uses the store never starts Spark.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

SESSION_KINDS = ("classic", "connect")
BOTH_MARKER = "sqliteq_both"
#: What pyspark reads to build Connect's columns and plans instead of Classic's
#: (pyspark.sql.utils.is_remote): ``F.col(...)`` made for one kind of session fails on the
#: other, so a run with both sets it for the tests on Connect only.
CONNECT_MODE_ENV = "SPARK_CONNECT_MODE_ENABLED"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sqliteq", "spark_queue's test kit")
    group.addoption("--sqliteq-remote", default=None, metavar="URL",
                    help="run sqliteq_spark on this Spark Connect server (sc://host:port); "
                    "default: SPARK_REMOTE, else a local Classic session")
    group.addoption("--sqliteq-both", action="store_true", default=False,
                    help="run every test that uses sqliteq_spark on Classic and on Connect")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{BOTH_MARKER}: run the test twice, its sqliteq_spark a Classic session "
        "and a Spark Connect one (--sqliteq-remote, SPARK_REMOTE, or a local server)")


def remote_url(config: pytest.Config) -> str | None:
    return config.getoption("--sqliteq-remote") or os.environ.get("SPARK_REMOTE") or None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sqliteq_spark" not in metafunc.fixturenames:
        return
    if metafunc.config.getoption("--sqliteq-both") or metafunc.definition.get_closest_marker(
            BOTH_MARKER):
        metafunc.parametrize("sqliteq_spark", SESSION_KINDS, indirect=True, scope="session")


class Sessions:
    """The sessions of one pytest run, each made on first use and stopped at the end."""

    def __init__(self, remote: str | None) -> None:
        self.remote = remote
        self.made: dict[str, Any] = {}
        self.server: Any = None

    def get(self, mode: str) -> Any:
        if mode not in self.made:
            from spark_queue.testing import sessions

            if mode == "classic":
                self.made[mode] = sessions.classic_session()
            else:
                url = self.remote
                if url is None:
                    self.server = sessions.ConnectServer()
                    url = self.server.url
                self.made[mode] = sessions.connect_session(url)
        return self.made[mode]

    def close(self) -> None:
        try:
            for session in self.made.values():
                for query in session.streams.active:
                    query.stop()
                session.stop()
        finally:
            if self.server is not None:
                self.server.stop()


@pytest.fixture(scope="session")
def _sqliteq_sessions(request: pytest.FixtureRequest) -> Iterator[Sessions]:
    made = Sessions(remote_url(request.config))
    yield made
    made.close()


@pytest.fixture(scope="session")
def sqliteq_spark(request: pytest.FixtureRequest, _sqliteq_sessions: Sessions) -> Any:
    """A SparkSession for the whole run: local Classic, or Spark Connect with
    ``--sqliteq-remote sc://...`` or SPARK_REMOTE; under ``@pytest.mark.sqliteq_both`` (or
    ``--sqliteq-both``) each test runs once on each."""
    mode = getattr(request, "param", None)
    if mode is None:
        mode = "connect" if _sqliteq_sessions.remote else "classic"
    return _sqliteq_sessions.get(mode)


def test_mode(request: pytest.FixtureRequest, sessions: Sessions) -> str | None:
    """``classic`` or ``connect`` for a test that uses sqliteq_spark, else None."""
    if "sqliteq_spark" not in request.fixturenames:
        return None
    callspec = getattr(request.node, "callspec", None)
    mode = callspec.params.get("sqliteq_spark") if callspec is not None else None
    return mode or ("connect" if sessions.remote else "classic")


@pytest.fixture(autouse=True)
def _sqliteq_connect_mode(request: pytest.FixtureRequest) -> Iterator[None]:
    """Pyspark's functions build Connect columns during a test on Connect, Classic ones
    during the others: one process serves both kinds of session under ``sqliteq_both``."""
    if "sqliteq_spark" not in request.fixturenames:
        yield
        return
    mode = test_mode(request, request.getfixturevalue("_sqliteq_sessions"))
    before = os.environ.get(CONNECT_MODE_ENV)
    if mode == "connect":
        os.environ[CONNECT_MODE_ENV] = "1"
    else:
        os.environ.pop(CONNECT_MODE_ENV, None)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CONNECT_MODE_ENV, None)
        else:
            os.environ[CONNECT_MODE_ENV] = before


@pytest.fixture
def sqliteq_store(tmp_path: Any) -> Iterator[Any]:
    """A fresh :class:`~spark_queue.store.Store` under ``tmp_path``, closed after the test."""
    from spark_queue.store import Store

    with Store(tmp_path / "sqliteq.sqlite") as store:
        yield store
