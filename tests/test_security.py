"""Security promises: stored data never runs code, SQL never holds user text,
files are private, the metrics server stays on this machine."""

from __future__ import annotations

import ast
import os
import pathlib
import pickle
import stat

import pytest

from spark_queue.cli import build_parser
from spark_queue.errors import InvalidNameError
from spark_queue.metrics import MetricsServer
from spark_queue.store import Store

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "spark_queue"
SOURCES = sorted(PACKAGE.rglob("*.py"))

# Every f-string interpolation inside SQL, with why it is safe. A new one fails
# this list until someone reviews it: user text must be bound with ?, never spliced.
REVIEWED_SQL_INTERPOLATIONS = {
    ("store/file/connection.py", "_SYNCHRONOUS[durability]"),  # fixed dict, durability validated
    ("store/file/connection.py", "defaults.WAL_LIMIT_BYTES"),  # int constant
    ("store/queues/queue_admin.py", "name"),  # a queue SETTINGS key, checked against the constants
    ("store/file/schema.py", "APPLICATION_ID"),  # int constant
    ("store/file/schema.py", "version + 1"),  # int from PRAGMA user_version
    ("store/streams/arrow_read.py", "cast"),  # 'BLOB' or 'TEXT' from a literal tuple
    ("store/queues/queue_admin.py", "CONFIG_COLUMNS"),  # column-list constants
    ("store/queues/queue_jobs.py", "CONFIG_COLUMNS"),
    ("store/queues/queue_admin.py", "_JOB_COLUMNS"),
    ("store/queues/queue_admin.py", "_DEAD_COLUMNS"),
    ("store/queues/queue_admin.py", "table"),  # one of two table-name literals
    ("store/streams/packed_insert.py", "_INSERT"),  # the INSERT column list, a constant
    ("store/streams/packed_insert.py", "key_sql"),  # one of four literal key expressions
    ("store/file/steps.py", "sizes_sql"),  # the callers' SQL below, literals with ? for values
    ("store/streams/retention.py", "size_sql('key', 'value')"),  # column literals
    ("store/queues/dead_retention.py", "size_sql('value')"),
    ("store/queues/queue_admin.py", "size_sql('value')"),
    ("store/queues/queue_admin.py", "_EXPIRED"),  # a constant FROM/WHERE clause with ?
    ("store/maintenance.py", "', '.join(columns)"),  # the declared queue settings' names
}


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch PWNED",))


def _sql_fstrings(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant)
                           and isinstance(v.value, str))
            if text.lstrip().upper().startswith(("SELECT ", "INSERT ", "UPDATE ", "DELETE ",
                                                 "PRAGMA ", "CREATE ", "WITH ")):
                for value in node.values:
                    if isinstance(value, ast.FormattedValue):
                        yield ast.unparse(value.value)


def test_no_module_unpickles_or_evaluates():
    banned_modules = {"pickle", "cPickle", "dill", "cloudpickle", "marshal", "shelve"}
    found = []
    # The sink benchmark pickles a commit message to time Spark's own transport
    # of it; nothing stored is involved.
    for path in [p for p in SOURCES if p.parent.name != "bench"]:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module.split(".")[0]]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                names = [node.func.id] if node.func.id in ("eval", "exec") else []
            found += [f"{path.name}:{node.lineno} {n}" for n in names
                      if n in banned_modules | {"eval", "exec"}]
    assert not found


def test_sql_is_never_built_from_unreviewed_values():
    # Reviewed per file: the same variable name elsewhere is a new interpolation to review.
    interpolated = {
        (str(path.relative_to(PACKAGE)), expr)
        for path in SOURCES
        for expr in _sql_fstrings(ast.parse(path.read_text(), str(path)))
    }
    assert interpolated <= REVIEWED_SQL_INTERPOLATIONS, interpolated - REVIEWED_SQL_INTERPOLATIONS


def test_a_pickled_payload_comes_back_as_bytes_and_runs_nothing(store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    payload = pickle.dumps(_Evil())
    store.publish("t", payload)
    store.queue("q").enqueue(payload)
    assert store.read("t")[0].value == payload
    assert store.read_arrow("t").column("value").to_pylist() == [payload]
    assert store.queue("q").claim(1)[0].payload == payload
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("name", ["t'; DROP TABLE sq_events; --", 'x" OR 1=1', "a/../b", "x\x00"])
def test_injection_shaped_names_are_rejected_everywhere(store, name):
    with pytest.raises(InvalidNameError):
        store.publish(name, "v")
    store.publish("t", "v")
    with pytest.raises(InvalidNameError):
        store.commit_offsets(name, {"t": 1})
    with pytest.raises(InvalidNameError):
        store.queue(name).enqueue("job")
    assert store.check().ok


def test_store_files_including_wal_and_shm_are_private(store_path):
    old = os.umask(0)
    try:
        with Store(store_path) as store:
            store.publish("t", "v")
            for suffix in ("", "-wal", "-shm"):
                mode = stat.S_IMODE(os.stat(store_path + suffix).st_mode)
                assert mode == 0o600, (suffix, oct(mode))
    finally:
        os.umask(old)


def test_metrics_server_listens_on_loopback_by_default(store_path):
    Store(store_path).close()
    args = build_parser().parse_args(["metrics", store_path, "--serve", "0"])
    assert args.host == "127.0.0.1"
    server = MetricsServer(store_path, port=0)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()
