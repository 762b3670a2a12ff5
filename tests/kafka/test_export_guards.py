"""What keeps a Kafka copy numbered right, whatever runs beside it (issue #51, points 1-3):
a housekeeping run or a forced prune while a copy opens or sends, a store topic deleted and
created anew under a running mirror, and a second exporter of the same prefix.

The Kafka side is :mod:`tests.kafka.fake_link` (no broker): each case puts the other
process's work exactly inside the window it probes, through the fake's hook. The broker
tests (test_export.py, test_mirror_outage.py) run the same code against a real Kafka.
"""

from __future__ import annotations

import os
import socket
import threading

import pytest

from spark_queue.errors import MirrorGapError, MirrorLeaseError, MirrorTopicChangedError
from spark_queue.kafka import export
from spark_queue.kafka.export import export_topics
from spark_queue.kafka.records import Content, from_store_row
from spark_queue.store import Record, Store, hold_name
from tests.kafka.fake_link import FakeKafka

BOOTSTRAP = "fake-kafka:9092"


@pytest.fixture
def kafka(fake_kafka) -> FakeKafka:
    """Every export in the test talks to one in-memory Kafka."""
    return fake_kafka


def publish(store: Store, count: int, tag: str = "e", topic: str = "t") -> None:
    store.publish_many(topic, [Record(f"{tag}-{i}", key=f"k{i % 7}", timestamp_ms=1_000 + i)
                               for i in range(count)])


def contents(store: Store, start: int = 0, topic: str = "t") -> list[Content]:
    return [from_store_row(row, topic) for row in store.read_arrow(topic, start).to_pylist()]


def values(log: list[Content]) -> list[str]:
    return [c.value.decode() for c in log if c.value is not None]


def stop_after_flushes(kafka: FakeKafka, count: int, stop: threading.Event,
                       also=lambda call: None):
    """A hook that sets ``stop`` at the ``count``-th flush (a mirror's ``count``-th pass)."""
    def before(call: str) -> None:
        also(call)
        if call == "flush" and kafka.calls["flush"] >= count:
            stop.set()
    return before


# -- 1. the hold is saved before Kafka is asked anything --------------------------------------
def test_a_housekeeping_run_while_a_mirror_opens_its_copy_deletes_nothing_the_copy_lacks(
        kafka, store, store_path):
    publish(store, 1000)
    ever = contents(store)
    store.topic("t").set_retention(retention_rows=600)
    stop = threading.Event()

    def housekeeping_in_the_window(call: str) -> None:
        # Any process's run, between the bounds the copy starts from and its first record.
        if call == "log_ends" and kafka.calls["log_ends"] == 1:
            with Store(store_path) as other:
                assert other.housekeeping.run() is not None

    kafka.before = stop_after_flushes(kafka, 3, stop, housekeeping_in_the_window)
    [result] = export_topics(store_path, BOOTSTRAP, ["t"], follow=True, stop=stop, poll_ms=1)

    assert kafka.logs["t"] == ever  # offset n holds event n: no event skipped, none twice
    assert (result.shift, result.kafka_end, result.written) == (0, 1000, 1000)
    assert store.topic("t").mirror_shift() == 0
    # The copy has everything now: the next run applies the retention the hold kept back.
    assert store.committed_offsets(hold_name())["t"] == 1000
    store.housekeeping.run()
    assert store.topic("t").bounds() == (400, 1000)


def test_a_forced_prune_while_a_copy_opens_is_refused_and_a_rerun_starts_the_copy_there(
        kafka, store, store_path):
    publish(store, 1000)
    ever = contents(store)

    def forced_prune(call: str) -> None:
        if call == "log_ends" and kafka.calls["log_ends"] == 1:
            with Store(store_path) as other:
                other.topic("t").prune(retention_rows=600, force=True)

    kafka.before = forced_prune
    with pytest.raises(MirrorGapError, match=r"store topic 't'.* 0 .*removed up to 399"):
        export_topics(store_path, BOOTSTRAP, ["t"])
    assert kafka.logs["t"] == []  # nothing misnumbered went out
    # The refused opening left no hold and no shift: a rerun starts the copy where the store
    # starts now, shift 400, numbered right.
    assert store.topic("t").mirror_shift() is None
    assert store.committed_offsets(hold_name()) == {}
    [result] = export_topics(store_path, BOOTSTRAP, ["t"])
    assert (result.shift, result.kafka_start, result.kafka_end) == (400, 0, 600)
    assert kafka.logs["t"] == ever[400:]


def test_send_refuses_rows_that_do_not_start_where_the_copy_ends(
        kafka, store, store_path, monkeypatch):
    monkeypatch.setattr(export, "CHUNK_EVENTS", 100)
    publish(store, 1000)
    ever = contents(store)

    def forced_prune_after_the_first_chunk(call: str) -> None:
        if call == "produce" and kafka.calls["produce"] == 1:
            with Store(store_path) as other:
                other.topic("t").prune(retention_rows=500, force=True)

    kafka.before = forced_prune_after_the_first_chunk
    with pytest.raises(MirrorGapError, match=r"store topic 't'.*offset 100.*removed up to 499"):
        export_topics(store_path, BOOTSTRAP, ["t"])
    assert kafka.logs["t"] == ever[:100]  # the first chunk, and nothing renumbered after it
    # The hold names what Kafka confirmed (no flush came): retention kept nothing it lacked
    # only because the prune was forced.
    assert store.committed_offsets(hold_name()) == {"t": 0}


# -- 2. a store topic deleted and created anew under a running mirror ------------------------
@pytest.mark.parametrize("new_events", [50, 150])  # fewer than the copy holds, and more
def test_a_running_mirror_refuses_a_topic_deleted_and_created_anew(
        kafka, store, store_path, new_events):
    publish(store, 100, "old")
    stop = threading.Event()

    def recreate_after_the_first_pass(call: str) -> None:
        if call == "flush" and kafka.calls["flush"] == 1:
            with Store(store_path) as other:
                other.topic("t").delete()
                publish(other, new_events, "new")

    kafka.before = stop_after_flushes(kafka, 4, stop, recreate_after_the_first_pass)
    with pytest.raises(MirrorTopicChangedError,
                       match=r"store topic 't' was deleted .* Kafka topic 't' .*--prefix"):
        export_topics(store_path, BOOTSTRAP, follow=True, stop=stop, poll_ms=1)
    assert values(kafka.logs["t"]) == [f"old-{i}" for i in range(100)]
    # No hold names the new topic as copied.
    assert store.committed_offsets(hold_name()) == {}


# -- 3. one exporter per prefix --------------------------------------------------------------
def test_a_second_export_of_the_same_prefix_is_refused_naming_who_holds_it(
        kafka, store, store_path):
    publish(store, 300)
    refused: list[BaseException] = []

    def second_export(call: str) -> None:
        if call == "produce" and kafka.calls["produce"] == 1:
            try:
                export_topics(store_path, BOOTSTRAP, ["t"], prefix="p.")
            except MirrorLeaseError as exc:
                refused.append(exc)

    kafka.before = second_export
    [result] = export_topics(store_path, BOOTSTRAP, ["t"], prefix="p.")
    assert result.kafka_end == 300 and kafka.logs["p.t"] == contents(store)  # once each
    [error] = refused
    text = str(error)
    assert f"process {os.getpid()} on host {socket.gethostname()!r}" in text
    assert "since 20" in text and "'sqliteq.mirror.p.'" in text
    # Once the first is done, its lease is gone: the next run goes ahead.
    publish(store, 10)
    [result] = export_topics(store_path, BOOTSTRAP, ["t"], prefix="p.")
    assert (result.written, result.kafka_end) == (10, 310)


def test_exports_of_two_prefixes_run_at_once(kafka, store, store_path):
    publish(store, 50)
    other: list = []

    def second_export(call: str) -> None:
        if call == "produce" and kafka.calls["produce"] == 1:
            other.extend(export_topics(store_path, BOOTSTRAP, ["t"], prefix="b."))

    kafka.before = second_export
    export_topics(store_path, BOOTSTRAP, ["t"], prefix="a.")
    assert kafka.logs["a.t"] == kafka.logs["b.t"] == contents(store)
    assert other[0].kafka_end == 50


def test_a_running_mirror_keeps_its_lease_past_the_lease_time(
        kafka, store, store_path, monkeypatch):
    monkeypatch.setattr("spark_queue.store.streams.mirror_lease.MIRROR_LEASE_MS", 1000)
    publish(store, 10)
    stop = threading.Event()
    refused: list[BaseException] = []

    def held_for_ms() -> int:
        row = store.conn.execute(
            "SELECT (unixepoch('subsec') * 1000) - json_extract(value, '$.since_ms') "
            "FROM sq_meta WHERE key = 'mirror_lease/sqliteq.mirror'").fetchone()
        return 0 if row is None or row[0] is None else int(row[0])

    def second_export_later(call: str) -> None:
        # Twice the lease's length after the mirror took it (idle between passes, so only
        # the renewing thread kept it), it is still held.
        if call == "flush" and not refused and held_for_ms() > 2000:
            with pytest.raises(MirrorLeaseError) as caught:
                export_topics(store_path, BOOTSTRAP, ["t"])
            refused.append(caught.value)
            stop.set()

    kafka.before = second_export_later
    export_topics(store_path, BOOTSTRAP, ["t"], follow=True, stop=stop, poll_ms=20)
    assert refused


def test_a_lease_its_holder_left_behind_is_taken_once_it_runs_out(kafka, store, store_path):
    publish(store, 20)
    with store.write() as conn:  # a holder killed 1 minute ago, and one whose clock ran ahead
        conn.execute("INSERT INTO sq_meta (key, value) VALUES (?, ?)", (
            "mirror_lease/sqliteq.mirror",
            '{"token": "x", "host": "gone", "pid": 1, "since_ms": 1, "until_ms": 2,'
            ' "lease_ms": 30000, "renewals": 0}'))
        conn.execute("INSERT INTO sq_meta (key, value) VALUES (?, ?)", (
            "mirror_lease/sqliteq.mirror.ahead.",
            '{"token": "y", "host": "gone", "pid": 1, "since_ms": 1,'
            ' "until_ms": 99999999999999, "lease_ms": 30000, "renewals": 0}'))
    assert export_topics(store_path, BOOTSTRAP, ["t"])[0].kafka_end == 20
    assert export_topics(store_path, BOOTSTRAP, ["t"], prefix="ahead.")[0].kafka_end == 20


def test_an_exporter_that_lost_its_lease_saves_no_position(kafka, store, store_path):
    publish(store, 100)

    def taken_over(call: str) -> None:
        if call == "flush":
            with Store(store_path) as other, other.write() as conn:
                conn.execute("UPDATE sq_meta SET value = json_set(value, '$.token', 'other') "
                             "WHERE key = 'mirror_lease/sqliteq.mirror'")

    kafka.before = taken_over
    with pytest.raises(MirrorLeaseError, match="lost its lease"):
        export_topics(store_path, BOOTSTRAP, ["t"])
    assert store.committed_offsets(hold_name()) == {"t": 0}  # as opened, never moved past
