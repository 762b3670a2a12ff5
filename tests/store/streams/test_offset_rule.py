"""One rule for a consumer's saved offset and for a topic's readable end, in SQL once
(spark_queue/store/file/offset_views.py): ``Store.commit_offsets``, ``outbox.commit_offsets``
in a stdlib ``sqlite3`` process and plain SQL give the same answers, on a plain store and on
a replicated one whose mark trails the topic (issue 58: the outbox saved 6 where readers
saw 3, and a ``committed`` query then failed as if the store had been restored)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import spark_queue
from spark_queue.errors import OffsetRangeError
from spark_queue.store import ReplicaCycles, Store
from spark_queue.store.file import meta, offset_views

PACKAGE = Path(spark_queue.__file__).parent

# In another process: Python's sqlite3 is never loaded beside apsw connections.
_CLIENT = r"""
import json, sqlite3, sys
from spark_queue import outbox
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
answers = []
for offset in json.loads(sys.argv[2]):
    try:
        conn.execute("BEGIN IMMEDIATE")
        answers.append(outbox.commit_offsets(conn, "c", {"t": offset})["t"])
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        conn.execute("ROLLBACK")
        answers.append(str(exc))
print(json.dumps(answers))
"""


def outbox_saves(path: str, offsets: list[int]) -> list:
    out = subprocess.run([sys.executable, "-c", _CLIENT, path, json.dumps(offsets)],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return json.loads(out)


def store_saves(path: str, offsets: list[int]) -> list:
    answers: list = []
    with Store(path) as store:
        for offset in offsets:
            try:
                answers.append(store.commit_offsets("c", {"t": offset})["t"])
            except OffsetRangeError as exc:
                answers.append(str(exc))
    return answers


@pytest.fixture
def replicated(tmp_path):
    """A replicated store whose topic 't' holds 6 events and whose replica holds 3."""
    path = str(tmp_path / "s.sqlite")
    with Store(path) as store:
        store.publish_many("t", range(3))
    cycles = ReplicaCycles(path)
    cycles.mark("file:///replica")
    number, ends = cycles.begin()
    cycles.finish(number, ends)
    cycles.close()
    with Store(path) as store:
        store.publish_many("t", range(3, 6))
        assert store.topic("t").bounds() == (0, 3)
    return path


def test_python_and_a_stdlib_client_save_by_the_same_bound_on_a_replicated_store(replicated):
    offsets = [2, 6, 3, 1, 4]
    ours = store_saves(replicated, offsets)
    with Store(replicated) as store:
        store.delete_consumer("c")
    theirs = outbox_saves(replicated, offsets)
    # Saved: 2, then 3, and never back; refused: past the readable end 3.
    assert [a if isinstance(a, int) else "refused" for a in ours] == [2, "refused", 3, 3,
                                                                      "refused"]
    assert [a if isinstance(a, int) else "refused" for a in theirs] == [2, "refused", 3, 3,
                                                                        "refused"]
    assert "latest offset is 3" in ours[1]
    assert theirs[1].startswith("sq_save_offset:")


def test_the_readable_end_is_the_same_through_the_view_and_the_store(replicated):
    with Store(replicated) as store:
        view = store.conn.execute(
            "SELECT topic, first_offset, readable_end, next_offset FROM sq_topic_ends"
        ).fetchall()
        assert view == [("t", 0, 3, 6)]
        [info] = store.topics()
        assert (info.earliest, info.latest) == (0, 3)
        assert [e.offset for e in store.read("t")] == [0, 1, 2]


def test_plain_sql_saves_through_the_view_and_never_moves_back(store):
    store.publish_many("t", range(5))
    save = "INSERT INTO sq_save_offset (consumer, topic, next_offset) VALUES (?, 't', ?)"
    store.conn.execute(save, ("sql", 4))
    store.conn.execute(save, ("sql", 2))
    assert store.committed_offsets("sql") == {"t": 4}
    for bad in (6, -1, "3", None):
        with pytest.raises(Exception, match="sq_save_offset: next_offset"):
            store.conn.execute(save, ("sql", bad))
    with pytest.raises(Exception, match="sq_save_offset: consumer"):
        store.conn.execute(save, ("no spaces", 1))
    with pytest.raises(Exception, match="sq_save_offset: topic"):
        store.conn.execute(
            "INSERT INTO sq_save_offset (consumer, topic, next_offset) VALUES ('c', 'nope', 0)")


def test_the_view_names_the_replica_keys_meta_declares():
    for key in (meta.REPLICA_URL, meta.REPLICA_MARK, meta.REPLICA_MARK_BORN,
                meta.REPLICA_SYNCED_MS):
        assert f"key = '{key}'" in offset_views.TOPIC_ENDS_SQL, key


def test_only_the_view_writes_consumer_offsets():
    """The rows of sq_consumers are written (INSERT, UPDATE) in one place: the trigger of
    sq_save_offset. Deletes (a topic's, a consumer's) are not a saved offset."""
    writers = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = " ".join(node.value.split()).upper()
                if "INSERT INTO SQ_CONSUMERS " in text or "UPDATE SQ_CONSUMERS " in text:
                    writers.add(path.relative_to(PACKAGE).as_posix())
    assert writers == {"store/file/offset_views.py"}
