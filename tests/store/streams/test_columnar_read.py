"""The compiled Arrow reader (store/streams/columnar.py) returns exactly what the rows
path returned, byte for byte, for every payload shape and every schema version, and
leaves whatever it cannot vouch for to the rows path, which names the fault as before."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pytest

from spark_queue.errors import CorruptStoreError, PayloadError
from spark_queue.store import Record, Store
from spark_queue.store.streams import arrow_read, columnar

FIXTURES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "fixtures", "stores")
SHAPES = [(fmt, headers) for fmt in ("binary", "string") for headers in (False, True)]

VALUES = ["text", "", "ünïcode ✓", "a\x00b", {"json": [1, 2]}, [], 3, None, b"", b"\x00\xff",
          b"bytes", "x" * 70_000]
KEYS = [None, "", "k", "ключ", b"", b"\x01\x02", b"\x00"]
HEADERS = [None, {}, {"a": "b"}, {"ä": "ü", "two": ""}]


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _rows_path(monkeypatch, read):
    """``read()`` with the compiled reader switched off: today's rows path."""
    with monkeypatch.context() as patch:
        patch.setattr(columnar, "load", lambda conn: False)
        return read()


def _packed_only(monkeypatch, read):
    """``read()`` that fails if it falls back to the rows path."""
    def refuse(*args):
        raise AssertionError("the compiled reader left this read to the rows path")

    with monkeypatch.context() as patch:
        patch.setattr(arrow_read, "_fetch", refuse)
        return read()


def _outcome(read):
    try:
        return read(), None
    except Exception as exc:  # the rows path's error is the contract here
        return None, (type(exc), str(exc))


def _assert_same_both_ways(monkeypatch, store, topic, start, end, packed=True):
    """Every read shape: the rows path's table, byte for byte, from the compiled reader
    alone (``packed``; else from either); or, where the rows path fails, the same error."""
    for fmt, headers in SHAPES:
        def read(fmt=fmt, headers=headers):
            return store.read_arrow_payloads(topic, start, end, fmt, headers)

        old, old_error = _outcome(lambda: _rows_path(monkeypatch, read))
        if old_error is not None:
            assert _outcome(read)[1] == old_error
            continue
        new = _packed_only(monkeypatch, read) if packed else read()
        assert new.schema == old.schema
        assert new.to_pylist() == old.to_pylist()
        assert _ipc(new) == _ipc(old), (topic, fmt, headers)


def test_the_compiled_reader_loads_into_the_stores_connection(store):
    assert os.path.exists(columnar.LIBRARY), "make install compiles csrc/arrow_columns.c"
    assert columnar.load(store.conn)


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_every_value_shape_reads_byte_identical(monkeypatch, store, value):
    store.publish_many("t", [value, Record(value, key="k", headers={"h": "v"}), value])
    _assert_same_both_ways(monkeypatch, store, "t", 0, 3)


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_every_key_shape_reads_byte_identical(monkeypatch, store, key):
    store.publish_many("t", [Record("v", key=key), Record(b"w", key=key), Record(None, key=key)])
    _assert_same_both_ways(monkeypatch, store, "t", 0, 3)


@pytest.mark.parametrize("headers", HEADERS, ids=repr)
def test_every_header_shape_reads_byte_identical(monkeypatch, store, headers):
    store.publish_many("t", [Record("v", headers=headers), Record(b"w", key="k", headers=headers)])
    _assert_same_both_ways(monkeypatch, store, "t", 0, 2)


def test_nulls_at_every_bit_position_read_byte_identical(monkeypatch, store):
    # 21 rows: null runs that start and end inside and across validity bytes.
    values = [None if i % 3 == 0 or 8 <= i <= 12 else f"v{i}" for i in range(21)]
    keys = [None if i % 2 else f"k{i}" for i in range(21)]
    store.publish_many("t", [Record(v, key=k) for v, k in zip(values, keys, strict=True)])
    for start, end in ((0, 21), (3, 17), (7, 8), (20, 21)):
        _assert_same_both_ways(monkeypatch, store, "t", start, end)


@pytest.mark.parametrize("largest", ["key", "value", "headers", "none"])
def test_whichever_column_holds_the_most_bytes_reads_byte_identical(monkeypatch, store, largest):
    # The packed result grows out of the largest data buffer; every other section goes
    # after it. Each column in turn is that base, and an all-empty range has none.
    big = "b" * 5_000
    def record(i: int) -> Record:
        if largest == "none":
            return Record(b"", key=b"")
        return Record(big if largest == "value" else f"v{i}",
                      key=big if largest == "key" else f"k{i}",
                      headers={"h": big} if largest == "headers" else {"h": str(i)})
    store.publish_many("t", [record(i) for i in range(13)])
    for start, end in ((0, 13), (5, 6)):
        _assert_same_both_ways(monkeypatch, store, "t", start, end)


def test_more_rows_than_the_reader_expected_read_as_before(monkeypatch, store):
    # The expected count only sizes buffers: a wrong one regrows them, it never cuts rows.
    store.publish_many("t", [f"v{i}" for i in range(3000)])
    tid = store.conn.execute("SELECT id FROM sq_topics WHERE name = 't'").fetchall()[0][0]
    assert columnar.load(store.conn)
    for expected in (0, 1, 2999, 3000, 10**9):
        blob = store.conn.execute(
            "SELECT sq_arrow_columns('bb', 0, ?, offset, ts_ms, CAST(key AS BLOB), "
            "CAST(value AS BLOB)) FROM sq_events WHERE topic_id = ?", (expected, tid),
        ).fetchall()[0][0]
        _, _, keys, values = columnar.decode(blob, [pa.binary(), pa.binary()])
        assert values.to_pylist() == [f"v{i}".encode() for i in range(3000)]
        assert keys.null_count == 3000


def test_a_range_after_retention_reads_byte_identical(monkeypatch, store):
    store.publish_many("t", range(10))
    store.topic("t").prune(retention_rows=4)
    _assert_same_both_ways(monkeypatch, store, "t", 0, 10)


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_stores_of_every_schema_version_read_byte_identical(monkeypatch, tmp_path, version):
    path = str(tmp_path / f"v{version}.sqlite")
    shutil.copyfile(os.path.join(FIXTURES, f"v{version}.sqlite"), path)
    with Store(path) as store:
        for topic in ("events", "other"):
            end = store.topic(topic).latest_offset()
            _assert_same_both_ways(monkeypatch, store, topic, 0, end)


def test_text_that_is_not_utf8_fails_as_before(monkeypatch, store):
    store.publish_many("t", ["a", "b"])
    store.conn.execute("UPDATE sq_events SET value = X'61FF' WHERE offset = 1")
    with pytest.raises(PayloadError, match="not valid UTF-8"):
        store.read_arrow_payloads("t", 0, 2, "string")
    _assert_same_both_ways(monkeypatch, store, "t", 0, 2)


def test_headers_a_foreign_client_stored_as_a_blob_read_as_before(monkeypatch, store):
    store.publish_many("t", [Record("a", headers={"h": "v"})])
    store.conn.execute("UPDATE sq_events SET headers = CAST(headers AS BLOB)")
    _assert_same_both_ways(monkeypatch, store, "t", 0, 1, packed=False)


def test_a_hole_fails_naming_the_offsets_as_before(store):
    store.publish_many("t", range(5))
    store.conn.execute("DELETE FROM sq_events WHERE offset = 2")
    with pytest.raises(CorruptStoreError, match="offset"):
        store.read_arrow_payloads("t", 0, 5)


def test_where_the_extension_cannot_load_the_read_warns_once_and_reads_as_before(
    monkeypatch, store, caplog
):
    # A wheel carries the extension built for one machine type; elsewhere it cannot load.
    store.publish_many("t", ["a", Record(b"b", key="k")])
    monkeypatch.setattr(columnar, "LIBRARY", os.path.join(FIXTURES, "README.md"))
    monkeypatch.setattr(columnar, "_unavailable", [])
    monkeypatch.setattr(columnar, "_warned", [])
    monkeypatch.setattr(columnar, "_loaded", type(columnar._loaded)())
    columnar.read_path()  # a doctor asking first does not use up the warning
    with caplog.at_level("WARNING", logger="spark_queue.store"):
        first = store.read_arrow_payloads("t", 0, 2)
        second = store.read_arrow_payloads("t", 0, 2)
    assert first.to_pylist() == second.to_pylist()
    assert first.column("value").to_pylist() == [b"a", b"b"]
    assert len([r for r in caplog.records if "cannot load" in r.getMessage()]) == 1


def test_no_second_sqlite_library_enters_the_process(tmp_path):
    # Closing a second SQLite library's connection would drop apsw's POSIX locks on the
    # file: the reading process maps apsw's SQLite and the extension, nothing else.
    script = (
        "import sys\n"
        "from spark_queue.store import Store\n"
        "from spark_queue.store.streams import columnar\n"
        "with Store(sys.argv[1]) as s:\n"
        "    s.publish_many('t', ['a', 'b'])\n"
        "    assert columnar.load(s.conn)\n"
        "    assert s.read_arrow_payloads('t', 0, 2).num_rows == 2\n"
        "    print(open('/proc/self/maps').read())\n"
    )
    if not os.path.exists("/proc/self/maps"):
        pytest.skip("needs /proc (Linux)")
    maps = subprocess.run([sys.executable, "-c", script, str(tmp_path / "s.sqlite")],
                          check=True, capture_output=True, text=True).stdout
    libraries = {line.split()[-1] for line in maps.splitlines() if line.endswith(".so")
                 or ".so." in line}
    assert any("_arrow_columns" in lib for lib in libraries)
    assert not [lib for lib in libraries if "libsqlite3" in lib or "_sqlite3" in lib], libraries
