"""The chaos run's producer (benchmarks/schema_chaos.py), without Spark: a stdlib sqlite3
process publishing through sq_publish, a share of its events malformed, leaves exactly the
malformed events in the quarantine and exactly the others in the topic, at dense offsets."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from benchmarks.schema_chaos import BAD_KINDS, PRODUCER, SCHEMA, quarantined_ids
from spark_queue.store import Store


def test_the_quarantine_holds_the_malformed_events_and_the_topic_the_others(tmp_path):
    path, out = str(tmp_path / "edge.sqlite"), str(tmp_path / "sent.json")
    with Store(path) as store:
        store.topic("readings").set_schema(SCHEMA, on_invalid="quarantine")
        # 5 % malformed, as fast as it goes; stopped once the topic holds 400 events.
        producer = subprocess.Popen([sys.executable, "-c", PRODUCER, path, "100000", "0.05",
                                     "7", out, json.dumps(BAD_KINDS)])
        try:
            _wait(store)
        finally:
            open(out + ".stop", "w").close()
            assert producer.wait(timeout=60) == 0
        with open(out) as f:
            sent = json.load(f)
        bad = sorted(i for ids in sent["malformed"].values() for i in ids)
        held = store.topic("readings").quarantine()
        events = store.read("readings")

    assert set(sent["malformed"]) == set(BAD_KINDS) and all(sent["malformed"].values())
    assert quarantined_ids(held) == bad
    assert [e.offset for e in events] == list(range(sent["sent"] - len(bad)))
    assert [e.value["id"] for e in events] == sorted(set(range(sent["sent"])) - set(bad))
    assert {q.writer for q in held} == {"sq_publish"}


def _wait(store: Store) -> None:
    """Until the topic holds 400 events (the producer sends 100 per transaction)."""
    deadline = time.monotonic() + 60
    while store.topic("readings").latest_offset() < 400:
        assert time.monotonic() < deadline, "the producer published nothing in 60 s"
        time.sleep(0.01)
