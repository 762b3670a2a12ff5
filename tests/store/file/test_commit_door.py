"""One door per rule: every write transaction of the package commits through
``connection.commit_write`` (the durability, ``replicated`` included), every store file is
opened through ``opening.open_store_file``, and every savepoint is ``connection.savepoint``.

The tests enumerate the sites in the source (string constants that start a transaction
statement, calls of the raw openers) and fail on one outside its door, so a new write path
cannot go round the replica's wait again (issue 58: ``store.transaction()`` and the sink
committed on their own and skipped it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import spark_queue

PACKAGE = Path(spark_queue.__file__).parent
CONNECTION = "store/file/connection.py"

# Where each kind of statement may appear: (module, function) pairs.
_DOORS = {
    "BEGIN": {(CONNECTION, "write_transaction"), (CONNECTION, "begin"),
              (CONNECTION, "transact"), (CONNECTION, "read_transaction")},
    "COMMIT": {(CONNECTION, "commit_write"), (CONNECTION, "read_transaction")},
    # (StoreConnection.commit calls commit_write: the name, not a statement.)
    "END": set(),
    "ROLLBACK": {(CONNECTION, "rollback_write"), (CONNECTION, "savepoint")},
    "SAVEPOINT": {(CONNECTION, "savepoint")},
    "RELEASE": {(CONNECTION, "savepoint")},
}
# A whole string that is one transaction-control statement (prose that starts with
# "Commit" or "End" is not one).
_STATEMENT = re.compile(
    r"^\s*(?:(BEGIN)(?:\s+(?:IMMEDIATE|DEFERRED|EXCLUSIVE))?(?:\s+TRANSACTION)?"
    r"|(COMMIT)(?:\s+TRANSACTION)?|(END)\s+TRANSACTION"
    r"|(ROLLBACK)(?:\s+TRANSACTION)?(?:\s+TO(?:\s+SAVEPOINT)?\s+\w+)?"
    r"|(SAVEPOINT)\s+\w+|(RELEASE)(?:\s+SAVEPOINT)?\s+\w+)\s*;?\s*$",
    re.IGNORECASE)


def _sites(pattern_of):
    """(module, enclosing function, what) for each match ``pattern_of(node)`` in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(), str(path))
        for func in [None, *[n for n in ast.walk(tree)
                             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]]:
            body = tree if func is None else func
            inner = {id(n) for f in ast.walk(body) if f is not body
                     and isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                     for n in ast.walk(f)}
            for node in ast.walk(body):
                if id(node) in inner:
                    continue
                what = pattern_of(node)
                if what is not None:
                    found.append((module, None if func is None else func.name, what))
    return found


def _transaction_statement(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        match = _STATEMENT.match(node.value)
        if match:
            return next(group for group in match.groups() if group).upper()
    return None


def test_every_transaction_statement_of_the_package_is_in_its_door():
    sites = _sites(_transaction_statement)
    outside = [site for site in sites if site[:2] not in _DOORS[site[2]]]
    assert not outside, (
        "a transaction statement outside the doors of store/file/connection.py: commit "
        f"through StoreConnection.write()/transact()/begin()+commit() instead: {outside}")
    # The doors themselves are still where this test looks for them.
    assert {site[:2] for site in sites if site[2] == "COMMIT"} == _DOORS["COMMIT"]


def _call_of(*names):
    def pattern(node):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in names:
                return name
        return None
    return pattern


def test_only_the_connection_module_calls_the_commit_and_the_raw_transaction():
    sites = _sites(_call_of("commit_write", "write_transaction", "rollback_write"))
    outside = [site for site in sites
               if site[0] != CONNECTION and site != ("store/file/schema.py", "_migrate",
                                                     "write_transaction")]
    assert not outside, f"commit through a StoreConnection, not the raw functions: {outside}"


# Sites that open a file with SQLite themselves, each for a reason of its own.
_OPENERS = {
    ("store/file/opening.py", "open_store_file", "open_connection"),
    ("store/file/connection.py", "open_connection", "Connection"),
    # The backup's source migrates nothing and must stay byte-identical, the status read
    # of a file that may be no store yet, and the backup's new file (not a store until the
    # copy is whole).
    ("store/file/backup.py", "__init__", "open_connection"),
    ("store/file/backup.py", "_copy", "Connection"),
    ("store/replica_cycles.py", "replica_status", "open_connection"),
    # `sqliteq check` opens a damaged file that no schema check may refuse.
    ("store/maintenance.py", "_looking_connection", "Connection"),
    # Scratch space in memory, not a file.
    ("store/streams/columnar.py", None, "Connection"),
}


def test_every_store_file_is_opened_through_open_store_file():
    sites = set(_sites(_call_of("open_connection", "Connection")))
    columnar = {s for s in sites if s[0] == "store/streams/columnar.py"}
    sites = (sites - columnar) | {("store/streams/columnar.py", None, "Connection")} \
        if columnar else sites
    assert sites <= _OPENERS, (
        "open a store file with spark_queue.store.file.opening.open_store_file (its "
        f"schema check and durability): {sorted(sites - _OPENERS, key=str)}")
