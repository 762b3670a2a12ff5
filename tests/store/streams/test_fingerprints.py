"""An event's fingerprint names it across copies of its store and tells it from any other
event at the same offset (what the Spark source's restore check relies on)."""

from __future__ import annotations

from spark_queue.store import Encoded, Fingerprint, Record, Store, backup_file, event_fingerprints
from spark_queue.store.streams.fingerprints import digest_of


def test_a_copy_of_the_store_gives_the_same_fingerprints(store, store_path, tmp_path):
    store.publish_many("t", [{"n": 1}, b"\x00raw", "text"])
    store.publish("u", "x", key="k", headers={"h": "v"})
    copy = str(tmp_path / "copy.sqlite")
    backup_file(store_path, copy)
    positions = {"t": 2, "u": 0}
    with Store(copy) as restored:
        assert event_fingerprints(restored, positions) == event_fingerprints(store, positions)
    found = event_fingerprints(store, positions)
    assert found["t"].offset == 2 and found["t"].ts_ms == store.read("t", 2)[0].timestamp_ms
    assert len(found["t"].digest) == 16 and isinstance(found["t"], Fingerprint)


def test_another_event_at_the_same_offset_and_time_differs(tmp_path):
    fingerprints = []
    for name, record in [("a", Record("v", "k", None, 1000)), ("b", Record("w", "k", None, 1000)),
                         ("c", Record("v", "k2", None, 1000)),
                         ("d", Record("v", "k", {"h": "1"}, 1000)),
                         ("e", Record(b"v", "k", None, 1000)),
                         ("f", Record(Encoded('"v"', 2), "k", None, 1000))]:
        with Store(str(tmp_path / f"{name}.sqlite")) as store:
            store.publish_many("t", [record])
            fingerprints.append(event_fingerprints(store, {"t": 0})["t"])
    assert {f.ts_ms for f in fingerprints} == {1000}
    assert len({f.digest for f in fingerprints}) == len(fingerprints)


def test_offsets_the_store_does_not_hold_are_left_out(store):
    store.publish_many("t", range(10))
    store.topic("t").prune(retention_rows=5, force=True)
    assert set(event_fingerprints(store, {"t": 4, "missing": 0})) == set()
    assert set(event_fingerprints(store, {"t": 10})) == set()
    assert set(event_fingerprints(store, {"t": 5})) == {"t"}


def test_columns_cannot_trade_bytes():
    # A tag and a length before each column: moving bytes from the key to the value changes
    # the digest.
    assert digest_of(1, "ab", "c", None) != digest_of(1, "a", "bc", None)
    assert digest_of(1, None, "", None) != digest_of(1, "", None, None)
    assert digest_of(1, b"x", None, None) != digest_of(1, "x", None, None)
