"""Store -> Kafka -> store keeps every value's and key's stored type, not only its bytes:
the text "42" stays text, the bytes b"abc" stay bytes, SQL NULL and JSON null stay apart.
Only the records whose type an import would infer wrongly carry the reserved
``sqliteq.types`` header, and the import removes it; an event stamped 0 ms (which Kafka's
client sends as "now") carries its stamp in ``sqliteq.timestamp``."""

from __future__ import annotations

import json

import pytest

from spark_queue.errors import KafkaError, PayloadError
from spark_queue.kafka.export import export_topics
from spark_queue.kafka.importing import import_topic
from spark_queue.kafka.link import KafkaLink
from spark_queue.kafka.records import (
    JSON_SCHEMA_HEADER,
    RESERVED_HEADERS,
    SCHEMA_HEADER,
    TIMESTAMP_HEADER,
    TYPES_HEADER,
    Content,
    from_message,
    from_store_row,
)
from spark_queue.store import JSON, TEXT, Encoded, Record, Store

# (value as published, the types header its Kafka record carries)
VALUES = [
    ({"a": [1, "é"]}, None),
    (42, None),
    (Encoded('"quoted"', JSON), None),  # a JSON string
    (Encoded("null", JSON), None),  # JSON null: not SQL NULL
    ("plain text", None),
    ("", None),  # not JSON, so inferred as text
    ("NaN", None),  # not standard JSON: text
    ("42", "value=text"),
    ("null", "value=text"),
    ("true", "value=text"),
    ('"quoted"', "value=text"),
    ('{"a": 1}', "value=text"),
    (b"\xff\x00", None),  # not UTF-8: bytes
    (b"abc", "value=bytes"),
    (b"", "value=bytes"),
    (b"42", "value=bytes"),
    (b"null", "value=bytes"),
    (None, None),  # SQL NULL (Kafka's tombstone)
    (Encoded(None, TEXT), "value=text"),  # a NULL stored as text (value_type 1)
]
# (key, the types header's part for it)
KEYS = [("k", None), ("", None), ("42", None), (None, None), (b"\xff", None),
        (b"abc", "key=bytes"), (b"", "key=bytes")]
HEADERS = [None, {"h": "v"}, {"a": "1", "b": "é", "empty": ""}]


def every_shape() -> list[tuple[Record, str | None]]:
    """Every value with every key, headers and timestamps varied; with its expected mark."""
    shapes = []
    for i, (value, value_mark) in enumerate(VALUES):
        for j, (key, key_mark) in enumerate(KEYS):
            n = i * len(KEYS) + j
            record = Record(value, key=key, headers=HEADERS[n % len(HEADERS)],
                            timestamp_ms=[0, 1][n] if n < 2 else 1_600_000_000_000 + n * 7)
            shapes.append((record, ",".join(m for m in (key_mark, value_mark) if m) or None))
    return shapes


def typed(events) -> list[tuple]:
    """Everything ``Store.read`` returns, with the Python types of key and value (``1`` and
    ``True`` are equal in Python, ``b"k"`` and ``"k"`` are not, but both must stay)."""
    return [(e.offset, e.key, type(e.key), e.value, type(e.value), e.value_type, e.headers,
             e.timestamp_ms) for e in events]


def test_only_records_whose_type_inference_gets_wrong_carry_the_types_header(store):
    shapes = every_shape()
    store.publish_many("t", [record for record, _ in shapes])
    for row, (_, mark) in zip(store.read_arrow("t").to_pylist(), shapes, strict=True):
        headers = dict(from_store_row(row).headers)
        assert headers.pop(TYPES_HEADER, None) == mark, row
        assert headers.pop(TIMESTAMP_HEADER, None) == ("0" if row["timestamp_ms"] == 0 else None)
        assert headers == json.loads(row["headers"] or "{}")  # the event's own, unchanged


def test_store_to_kafka_to_store_keeps_every_value_and_key_type(any_kafka, prefix, store,
                                                                 store_path, tmp_path):
    kafka = any_kafka  # 4.1 and 3.7, the oldest broker supported
    shapes = every_shape()
    store.publish_many("t", [record for record, _ in shapes])

    export_topics(store_path, kafka, ["t"], prefix=prefix)

    with KafkaLink(kafka) as link:
        records = list(link.read_messages(prefix + "t", 0, 0, len(shapes)))
    marks = [dict(m.headers or []).get(TYPES_HEADER) for m in records]
    assert marks == [None if mark is None else mark.encode() for _, mark in shapes]
    stamps = [(m.timestamp_ms, dict(m.headers or []).get(TIMESTAMP_HEADER))
              for m in records[:3]]
    assert stamps[0][0] > 1_600_000_000_000 and stamps[0][1] == b"0"  # sent as 0: "now"
    assert stamps[1:] == [(1, None), (1_600_000_000_014, None)]

    back = str(tmp_path / "back.sqlite")
    import_topic(back, kafka, prefix + "t", into="t")
    with Store(back) as copy:
        assert typed(copy.read("t")) == typed(store.read("t"))
        assert copy.read("t") == store.read("t")


@pytest.mark.parametrize("name", RESERVED_HEADERS)
def test_a_store_header_with_a_reserved_name_is_refused_naming_the_event(kafka, prefix, store,
                                                                         store_path, name):
    store.publish_many("t", ["a", Record("b", headers={name: "0"})])
    with pytest.raises(PayloadError, match=rf"store topic 't' offset 1 has a header named "
                                           rf"'{name}'"):
        export_topics(store_path, kafka, ["t"], prefix=prefix)


def test_a_foreign_types_header_is_applied_when_valid_and_named_when_not(kafka, prefix,
                                                                        tmp_path):
    with KafkaLink(kafka) as link:
        for topic, mark in (("ok", "value=text,key=bytes"), ("bad", "value=float")):
            # Stamped 0: the client stamps the time of sending, as a producer that sets none.
            link.produce(prefix + topic, [Content(b"k", b"7", ((TYPES_HEADER, mark), ("x", "1")),
                                                  0)])
        link.flush()

    back = str(tmp_path / "back.sqlite")
    import_topic(back, kafka, prefix + "ok", into="ok")
    with pytest.raises(KafkaError, match=r"offset 0 has header sqliteq.types='value=float'"):
        import_topic(back, kafka, prefix + "bad", into="bad")
    with Store(back) as copy:
        [event] = copy.read("ok")
        assert (event.key, event.value, event.value_type, event.headers) == (
            b"k", "7", "text", {"x": "1"})
        assert copy.read("bad") == []  # nothing of the bad record's batch is stored


def test_a_topic_with_a_schema_comes_back_without_its_schema_headers(kafka, prefix, store,
                                                                     store_path, tmp_path):
    sensors = store.topic("t")
    sensors.set_schema("device STRING NOT NULL, temp DOUBLE")
    store.publish_many("t", [{"device": "a", "temp": 1.5}, Record({"device": "b"},
                                                                  headers={"h": "1"})])
    export_topics(store_path, kafka, ["t"], prefix=prefix)
    with KafkaLink(kafka) as link:
        records = list(link.read_messages(prefix + "t", 0, 0, 2))
    assert [dict(from_message(r).headers).get(SCHEMA_HEADER) for r in records] == ["1", "1"]
    assert JSON_SCHEMA_HEADER in dict(from_message(records[0]).headers)

    back = str(tmp_path / "back.sqlite")
    import_topic(back, kafka, prefix + "t", into="t")
    with Store(back) as copy:
        assert copy.read("t") == store.read("t")  # headers as published, nothing added
