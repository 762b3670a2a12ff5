"""The source's bulk read: same rows as read_arrow, the stored offsets verified dense."""

from __future__ import annotations

import pytest

from spark_queue.errors import OptionError
from spark_queue.store import Record


def test_payload_read_matches_read_arrow_row_for_row(store):
    store.publish_many(
        "t", [Record("a", key="k", headers={"h": "v"}), "b", {"c": 1}, b"\x00", Record(None)]
    )
    for fmt in ("binary", "string"):
        if fmt == "string":
            store.publish_many("u", ["x", {"y": 2}, Record("z", key="k")])
        topic = "t" if fmt == "binary" else "u"
        full = store.read_arrow(topic, 0, payload_format=fmt)
        full = full.drop_columns(["value_type", "key_type"])
        lean = store.read_arrow_payloads(topic, 0, 10, fmt, headers=True)
        assert lean.to_pylist() == full.to_pylist()
        assert store.read_arrow_payloads(topic, 1, 2, fmt).column_names == [
            "offset", "timestamp_ms", "key", "value"
        ]


def test_payload_read_after_retention_returns_the_surviving_suffix(store):
    store.publish_many("t", range(10))
    store.topic("t").prune(retention_rows=4)
    table = store.read_arrow_payloads("t", 0, 10)
    assert table.column("offset").to_pylist() == [6, 7, 8, 9]
    assert table.column("value").to_pylist() == [b"6", b"7", b"8", b"9"]
    assert store.read_arrow_payloads("t", 0, 5).num_rows == 0


def test_an_unknown_payload_format_is_an_option_error(store):
    store.publish("t", "x")
    for read in (lambda: store.read_arrow("t", payload_format="utf8"),
                 lambda: store.read_arrow_payloads("t", 0, 1, "utf8")):
        with pytest.raises(OptionError, match="payload_format must be 'binary' or 'string'"):
            read()
