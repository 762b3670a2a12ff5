"""on_invalid="quarantine": an event that does not fit goes, as its writer gave it, to the
topic's quarantine; the writer is answered with an explicit flag; the topic's offsets stay
dense with only valid events; replay and purge; every writer alike."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from spark_queue.store import (
    EncodedChunk,
    Producer,
    Quarantined,
    Store,
    TopicRows,
    quarantine_totals,
)
from spark_queue.store.file.codec import TEXT

DDL = "device STRING NOT NULL, temp DOUBLE"
GOOD = {"device": "d1", "temp": 21.5}
BAD = '{"device": "d1", "temp": "21.5"}'  # text, stored as given
REASON = 'field temp must be DOUBLE (a JSON number); got text "21.5"'


@pytest.fixture
def qstore(store):
    store.publish("t", GOOD)
    store.topic("t").set_schema(DDL, on_invalid="quarantine")
    return store


def values(store):
    return [e.value for e in store.read("t")]


def test_publish_answers_quarantined_and_the_topic_stays_dense(qstore):
    answer = qstore.publish("t", BAD, key="k", headers={"h": "1"})
    assert isinstance(answer, Quarantined) and answer.quarantined
    assert (answer.topic, answer.next_offset, answer.reason) == ("t", 1, REASON)
    assert qstore.publish("t", GOOD) == 1
    [held] = qstore.topic("t").quarantine()
    assert (held.id, held.value, held.value_type, held.key, held.headers, held.reason,
            held.schema_version, held.next_offset, held.writer) == (
        answer.quarantine_id, BAD, TEXT, "k", '{"h":"1"}', REASON, 1, 1, "python")
    assert values(qstore) == [GOOD, GOOD]
    assert quarantine_totals(qstore) == {"t": 1}


def test_publish_many_stores_the_valid_items_and_quarantines_the_rest(qstore):
    stored = qstore.publish_many("t", [GOOD, BAD, GOOD, "{broken"])
    assert stored == range(1, 3)
    held = qstore.topic("t").quarantine()
    assert [(q.batch_row, q.next_offset, q.value) for q in held] == [
        (1, 2, BAD), (3, 3, "{broken")]
    assert "not JSON text" in held[1].reason
    assert values(qstore) == [GOOD, GOOD, GOOD]


def test_a_transaction_and_a_sink_batch_quarantine_alike(qstore):
    with qstore.transaction() as tx:
        assert isinstance(tx.publish("t", BAD), Quarantined)
        assert tx.publish("t", GOOD) == 1
    done = qstore.commit_sink_batch("q1", 0, TopicRows("t", [
        EncodedChunk([json.dumps(GOOD), BAD, json.dumps(GOOD)], TEXT)]))
    assert done.rows == 2
    assert [q.batch_row for q in qstore.topic("t").quarantine()] == [0, 1]
    assert qstore.topic("t").bounds() == (0, 4)


def test_the_producer_answers_quarantined_and_stores_its_neighbours(qstore, store_path):
    with Producer(store_path, linger_ms=600_000) as producer:
        futures = [producer.publish_nowait("t", v) for v in (GOOD, BAD, GOOD)]
        producer.flush()
        answers = [f.result(timeout=60) for f in futures]
    assert answers[0] == 1 and answers[2] == 2
    assert isinstance(answers[1], Quarantined) and answers[1].next_offset == 2
    assert values(qstore) == [GOOD, GOOD, GOOD]


def test_a_stdlib_sqlite3_client_through_sq_publish_is_quarantined_too(qstore, store_path):
    script = textwrap.dedent("""
        import sqlite3, sys
        conn = sqlite3.connect(sys.argv[1], isolation_level=None)
        conn.execute("INSERT INTO sq_publish (topic, value, key) VALUES ('t', ?, 'k')",
                     (sys.argv[2],))
        conn.execute("INSERT INTO sq_publish (topic, value) VALUES ('t', ?)",
                     ('{"device": "d2"}',))
        conn.execute("INSERT INTO sq_publish (topic, value) VALUES ('t', ?), ('t', ?)",
                     (sys.argv[2], '{"device": "d3"}'))
    """)
    subprocess.run([sys.executable, "-c", script, store_path, BAD], check=True)
    assert values(qstore) == [GOOD, '{"device": "d2"}', '{"device": "d3"}']  # text, as given
    held = qstore.topic("t").quarantine()
    assert [(q.writer, q.next_offset, q.value, q.key, q.reason) for q in held] == [
        ("sq_publish", 1, BAD, "k", REASON), ("sq_publish", 2, BAD, None, REASON)]
    assert quarantine_totals(qstore) == {"t": 2}


def test_replay_publishes_what_fits_now_and_purge_deletes(qstore):
    qstore.publish_many("t", [BAD, "{broken"])
    topic = qstore.topic("t")
    first, second = (q.id for q in topic.quarantine())
    assert topic.replay_quarantine() == ([], [first, second])  # nothing fits yet
    topic.set_schema("device STRING NOT NULL, temp STRING", compatibility="none",
                     on_invalid="quarantine")
    assert topic.replay_quarantine() == ([1], [second])
    assert values(qstore)[1] == BAD  # its value type and bytes as quarantined
    assert topic.purge_quarantine([second]) == 1 and topic.quarantine() == []
    assert topic.purge_quarantine() == 0
    assert quarantine_totals(qstore) == {"t": 2}  # purging keeps the count


def test_a_valid_event_is_stored_byte_for_byte_with_quarantine_too(tmp_path):
    rows = []
    for name, on_invalid in (("plain", None), ("q", "quarantine")):
        with Store(str(tmp_path / f"{name}.db")) as store:
            if on_invalid:
                store.topic("t").set_schema(DDL, on_invalid=on_invalid)
            store.publish_many("t", [GOOD, '{"device":"x" }', b'{"device":"b"}'])
            rows.append(store.conn.execute(
                "SELECT offset, value, typeof(value), value_type FROM sq_events").fetchall())
    assert rows[0] == rows[1]
