"""The Kafka copy of a replicated store keeps to one bound, the readers' capped end (issue 58,
point 3): a replicated mark that trails by more than one chunk and moves during a pass must
not misnumber the copy.

Before: a pass took its end from the uncapped bounds and read each chunk capped at the mark
of the moment; a short chunk was followed by the next one produced where it ended (store
event 5000 at Kafka offset 1000) and only ``verify`` noticed. The replicator's cycles are
played by hand (ReplicaCycles) inside the fake Kafka's hook, so the mark moves exactly
between a pass's reads.
"""

from __future__ import annotations

import threading

import pytest

from spark_queue.kafka import export
from spark_queue.kafka.export import CHUNK_EVENTS, export_topics
from spark_queue.store import ReplicaCycles, Store, hold_name
from spark_queue.store.file import replica_mark
from tests.kafka.fake_link import FakeKafka
from tests.kafka.test_export_guards import BOOTSTRAP, contents, publish


@pytest.fixture
def kafka(monkeypatch) -> FakeKafka:
    """Every export of the test talks to one in-memory Kafka (no broker)."""
    cluster = FakeKafka()
    monkeypatch.setattr(export, "KafkaLink", cluster.link)
    return cluster


def _readable_end(store: Store) -> int:
    return store.topic("t").bounds()[1]


def test_a_mark_moving_during_a_pass_never_misnumbers_the_copy(kafka, store, store_path):
    cycles = ReplicaCycles(store_path)
    cycles.mark("file:///replica")
    publish(store, 1_000)
    cycles.finish(*cycles.begin())  # the mark: 1,000
    publish(store, 2 * CHUNK_EVENTS + 1_000, tag="f")  # it trails by more than two chunks
    assert _readable_end(store) == 1_000
    moves = {"left": 4}
    stop = threading.Event()
    holds: list[tuple[int, int]] = []

    def beside_the_export(call: str) -> None:
        # The hold is a consumer: never past what readers see.
        saved = store.committed_offsets(hold_name()).get("t")
        if saved is not None:
            holds.append((saved, _readable_end(store)))
        if call == "produce" and moves["left"]:
            # A cycle between two chunks of a pass: its snapshot is the end now, then more
            # events come, so the mark moves up and still trails by more than a chunk.
            moves["left"] -= 1
            number, ends = cycles.begin()
            publish(store, CHUNK_EVENTS + 500, tag=f"m{moves['left']}")
            cycles.finish(number, ends)
        elif call == "flush" and not moves["left"]:
            if len(kafka.logs["t"]) == _readable_end(store) == store.topic("t").latest_offset():
                stop.set()  # the copy has all, and the replica all the store holds
            else:
                cycles.finish(*cycles.begin())

    kafka.before = beside_the_export
    [result] = export_topics(store_path, BOOTSTRAP, ["t"], follow=True, stop=stop, poll_ms=1)

    # Store event n at Kafka offset n: none skipped, none twice, none misplaced.
    assert kafka.logs["t"] == contents(store)
    assert (result.shift, result.kafka_start, result.kafka_end) == (0, 0, len(contents(store)))
    assert result.kafka_end == 1_000 + (2 * CHUNK_EVENTS + 1_000) + 4 * (CHUNK_EVENTS + 500)
    assert holds and all(saved <= readable for saved, readable in holds)
    assert store.committed_offsets(hold_name())["t"] == result.kafka_end
    cycles.close()


def test_a_copy_ahead_of_the_mark_saves_its_hold_at_the_capped_end(kafka, store, store_path):
    """A copy made before the store was marked (or of a store restored with an older mark)
    holds more than readers see: its hold stays at the capped end, and nothing is sent
    until the mark passes Kafka's end."""
    publish(store, 3_000)
    [first] = export_topics(store_path, BOOTSTRAP, ["t"])
    assert first.kafka_end == 3_000
    cycles = ReplicaCycles(store_path)
    cycles.mark("file:///replica")
    with store.write() as conn:  # a mark below the copy's end, as an older restore leaves
        [(tid, born)] = conn.execute(
            "SELECT id, created_ms FROM sq_topics WHERE name = 't'").fetchall()
        replica_mark.put_mark(conn, {tid: 1_000}, {tid: born})
    publish(store, 500, tag="g")
    assert _readable_end(store) == 1_000
    [again] = export_topics(store_path, BOOTSTRAP, ["t"])
    assert (again.written, again.kafka_end) == (0, 3_000)
    assert store.committed_offsets(hold_name())["t"] == 1_000
    cycles.finish(*cycles.begin())
    [last] = export_topics(store_path, BOOTSTRAP, ["t"])
    assert (last.written, last.kafka_end) == (500, 3_500)
    assert kafka.logs["t"] == contents(store)
    cycles.close()
