"""The store's meta table has one owner (spark_queue/store/file/meta.py): no other module
of the package names it, and its reads and writes keep what they were given."""

from __future__ import annotations

import pathlib

import apsw

from spark_queue.store import Store
from spark_queue.store.file import meta

PACKAGE = pathlib.Path(meta.__file__).resolve().parents[2]
#: The owner, and the schema that creates the table (and writes the first id); and the
#: outbox, which speaks the plain-SQL protocol for stdlib clients (it reads whether the store
#: is replicated, docs/file-format.md) and may not import the store's apsw modules.
# offset_views.py: the readable end in SQL reads the replica keys (test_offset_rule checks it
# names meta.py's keys, spelt as literals: SQL is never built from values).
# topic_guard.py: the trigger that reads its create_topics_on_publish row.
OWNERS = {"store/file/meta.py", "store/file/schema.py", "outbox.py", "store/file/offset_views.py",
          "store/file/topic_guard.py"}


def test_only_the_meta_module_and_the_schema_name_the_meta_table():
    naming = {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
              if meta.TABLE in path.read_text()}
    assert naming == OWNERS


def test_a_value_reads_back_as_written_and_a_delete_forgets_it(tmp_path):
    with Store(str(tmp_path / "s.sqlite")) as store:
        with store.file.write() as conn:
            meta.put(conn, "k", "1")
            meta.put_json(conn, "j", {"a": [1, 2]})
            meta.add(conn, "n", "new")
        with store.file.read() as conn:
            assert (meta.get(conn, "k"), meta.get_json(conn, "j")) == ("1", {"a": [1, 2]})
            assert meta.has(conn, "n") and not meta.has(conn, "absent")
            assert meta.get_json(conn, "k") is None  # JSON, but no object: as if absent
        with store.file.write() as conn:
            meta.drop(conn, "k", "j", "absent")
        with store.file.read() as conn:
            assert meta.get(conn, "k") is None and meta.get_json(conn, "j") is None


def test_a_file_that_is_no_store_yet_has_no_meta_rows(tmp_path):
    conn = apsw.Connection(str(tmp_path / "empty.sqlite"))
    try:
        assert not meta.exists(conn)
        assert not meta.has(conn, meta.REPLICA_URL)
    finally:
        conn.close()
