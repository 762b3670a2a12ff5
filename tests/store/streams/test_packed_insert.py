"""The one-statement-per-chunk insert stores exactly what a row-by-row insert stores.

Every shape a batch can take is written both ways into two topics of one
store and compared column by column, with SQLite's storage class of each
value (TEXT vs BLOB matters: a reader in another language sees it).
"""

from __future__ import annotations

import pytest

from spark_queue.store import Record, Store, TopicRows
from spark_queue.store.file import carray
from spark_queue.store.streams import topic_log, topic_reads
from spark_queue.store.streams.event_log import open_log
from spark_queue.store.streams.topic_log import EncodedChunk

N = carray.CHUNK + 3  # crosses a chunk boundary

SHAPES = {
    "ascii text": [f"v{i}" for i in range(N)],
    "empty text": [""] * 5,
    "non-ascii text": [f"é{i}€\U0001f600" for i in range(50)],
    "text with NUL": ["a\x00b", "c"],
    "bytes": [bytes([i % 256]) * 3 + b"\x00" for i in range(N)],
    "empty bytes": [b"", b"x"],
    "json": [{"i": i} for i in range(30)],
    "mixed kinds": ["t", b"b", {"j": 1}, None, 7],
    "keys of one width": [Record(f"v{i}", key=f"{i:08d}") for i in range(N)],
    "multi-byte keys": [Record("v", key=k) for k in ("éé", "ab€"[:2], "xy")],
    "bytes keys": [Record(b"v", key=bytes([i % 256, 0])) for i in range(100)],
    "empty keys": [Record("v", key="") for _ in range(3)],
    "keys of varied width": [Record("v", key="k" * (i % 5)) for i in range(100)],
    "str and bytes keys": [Record("v", key="k"), Record("v", key=b"k")],
    "some keys missing": [Record("v", key=None), Record("v", key="k")],
    "headers": [Record("v", headers={"h": str(i)}) for i in range(10)] + ["plain"],
    "timestamps": [Record("v", timestamp_ms=1000 + i) for i in range(10)] + ["now"],
}

_COLUMNS = (
    "SELECT offset, ts_ms, key, typeof(key), value, typeof(value), value_type, headers "
    "FROM sq_events WHERE topic_id = ? ORDER BY offset"
)


def _row_by_row(store: Store, topic: str, items: list) -> None:
    """The reference: encode each item alone and insert it with executemany."""
    with store.write() as conn:
        tid, first, _ = topic_log.open_topic(conn, topic)
        ts = topic_log.now_ms()
        rows = [(tid, first + i, *_reference(item, ts)) for i, item in enumerate(items)]
        conn.executemany(
            "INSERT INTO sq_events (topic_id, offset, ts_ms, key, value, value_type, headers) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", rows,
        )
        conn.execute("UPDATE sq_topics SET next_offset = ? WHERE id = ?",
                     (first + len(items), tid))


def _reference(item: object, ts: int) -> tuple:
    value, vtype, stamp, key, headers = topic_log._encode(item, ts)
    return stamp, key, value, vtype, headers


def _stored(store: Store, topic: str) -> list[tuple]:
    with store.write() as conn:
        tid = topic_reads.topic_id(conn, topic)
        return [row[:1] + row[2:] for row in conn.execute(_COLUMNS, (tid,))]


def _stamps(store: Store, topic: str) -> list[int]:
    with store.write() as conn:
        tid = topic_reads.topic_id(conn, topic)
        return [row[1] for row in conn.execute(_COLUMNS, (tid,))]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_publish_many_stores_what_a_row_by_row_insert_stores(store: Store, shape: str) -> None:
    items = SHAPES[shape]
    store.publish("packed", "first")  # offsets start above 0
    store.publish("reference", "first")
    assert store.publish_many("packed", items) == range(1, len(items) + 1)
    _row_by_row(store, "reference", items)
    assert _stored(store, "packed") == _stored(store, "reference")
    explicit = [i.timestamp_ms for i in items if type(i) is Record and i.timestamp_ms]
    assert [s for s in _stamps(store, "packed") if s < 10**6] == explicit
    assert [e.value for e in store.read("packed", 1)] == [
        e.value for e in store.read("reference", 1)
    ]


@pytest.mark.parametrize("shape", ["ascii text", "bytes", "keys of one width", "headers"])
def test_encoded_chunks_and_producer_rows_store_the_same(store: Store, shape: str) -> None:
    """The sink's chunks and the producer's stored rows take the same path as publish_many."""
    items = SHAPES[shape]
    encoded = [_reference(item, 0)[1:] for item in items]  # key, value, vtype, headers
    for vtype in {row[2] for row in encoded}:
        rows = [row for row in encoded if row[2] == vtype]
        keys = [row[0] for row in rows]
        headers = [row[3] for row in rows]
        chunk = EncodedChunk(
            [row[1] for row in rows], vtype,
            None if set(keys) == {None} else keys, None if set(headers) == {None} else headers,
        )
        with store.write() as conn:
            topic_log.append_encoded(conn, "chunks", [chunk], ts_ms=5)
            log = open_log(conn, "stored")
            topic_log.insert_stored(conn, log, 5, [(r[1], r[2], r[0], r[3]) for r in rows])
    assert _stored(store, "chunks") == _stored(store, "stored")
    assert [row[1:] for row in _stored(store, "chunks")] == [
        (key, _kind(key), value, _kind(value), vtype, headers)
        for key, value, vtype, headers in sorted(encoded, key=lambda r: r[2])
    ] or len({row[2] for row in encoded}) > 1


def _kind(value: object) -> str:
    return {str: "text", bytes: "blob", type(None): "null"}[type(value)]


def test_a_chunk_whose_columns_differ_in_length_is_refused_whole(store: Store) -> None:
    from spark_queue.errors import PayloadError

    with pytest.raises(PayloadError, match="2 values but 1 keys"):
        store.commit_sink_batch(None, None,
                                TopicRows("t", [EncodedChunk(["a", "b"], 1, ["k"])]))
    assert store.topics() == [] or store.topic("t").bounds() == (0, 0)


@pytest.mark.parametrize("payloads", [
    [f"job{i}" for i in range(N)],  # one carray per chunk
    [bytes([i % 256]) for i in range(50)],
    ["a\x00b", "c", b"d", {"e": 1}, None],  # row by row
])
def test_enqueue_many_stores_each_payload_once_in_order(store: Store, payloads: list) -> None:
    from spark_queue.store.file.codec import encode_value

    ids = store.queue("q").enqueue_many(payloads)
    assert ids == list(range(ids[0], ids[0] + len(payloads)))
    with store.write() as conn:
        stored = conn.execute(
            "SELECT id, value, value_type, priority, available_at = enqueued_ms FROM sq_jobs "
            "ORDER BY id"
        ).fetchall()
    assert stored == [
        (job_id, *encode_value(p), 0, 1) for job_id, p in zip(ids, payloads, strict=True)
    ]


RECORD_BATCHES = {
    "text values, text keys": [Record(f"v{i}", key=f"k{i % 3}") for i in range(50)],
    "bytes values, bytes keys": [Record(b"\x00v%d" % i, key=b"k%d" % i) for i in range(50)],
    "keys of mixed kinds and none": [Record("v", key=k) for k in ("a", b"b", None, "cc", None)],
    "no keys": [Record(f"v{i}") for i in range(20)],
    "non-ASCII values": [Record("é", key="k"), Record("v", key="k")],
    "non-ASCII keys": [Record("v", key="ké"), Record("v", key="k")],
    "a header": [Record("v", key="k"), Record("v", key="k", headers={"h": "1"})],
    "a timestamp": [Record("v", key="k"), Record("v", key="k", timestamp_ms=5)],
    "values of mixed kinds": [Record("v"), Record(b"v"), Record({"a": 1}), Record(None)],
}


@pytest.mark.parametrize("name", sorted(RECORD_BATCHES))
def test_a_batch_of_records_is_stored_as_record_by_record_publishes_store_it(store, name):
    """publish_many reads plain keyed Records column by column; every batch is stored
    byte for byte and type for type as publishing each record alone stores it."""
    records = RECORD_BATCHES[name]
    store.publish_many("batch", records)
    for record in records:
        store.publish("alone", record.value, key=record.key, headers=record.headers,
                      timestamp_ms=record.timestamp_ms)
    rows = {}
    for topic in ("batch", "alone"):
        with store.write() as conn:
            rows[topic] = conn.execute(
                "SELECT e.offset, e.key, typeof(e.key), e.value, typeof(e.value), "
                "e.value_type, e.headers, e.ts_ms = 5 FROM sq_events e JOIN sq_topics t "
                "ON t.id = e.topic_id WHERE t.name = ? ORDER BY e.offset", (topic,)
            ).fetchall()
    assert rows["batch"] == rows["alone"]
