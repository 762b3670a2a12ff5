"""An export SIGKILLed at random points and rerun leaves Kafka equal to the store, offset for
offset: never a duplicate, a gap or a reorder (the resume reads Kafka's end offset)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from spark_queue.kafka.export import export_topics
from spark_queue.kafka.link import KafkaLink
from spark_queue.kafka.records import from_message, from_store_row
from spark_queue.store import Record, Store

EVENTS = 20_000
KILLS = 3


def kafka_end(link: KafkaLink, topic: str) -> int:
    if link.partitions(topic) is None:
        return 0  # the first run has not created it yet
    return link.watermarks(topic).high


def store_and_kafka(store_path: str, kafka, topic: str) -> tuple[list, list]:
    """The store topic ``t``'s records, and ``topic``'s in Kafka as (offset, record)."""
    with Store(store_path) as store:
        mine = [from_store_row(row) for row in store.read_arrow("t").to_pylist()]
    with KafkaLink(kafka) as link:
        theirs = [(m.offset, from_message(m)) for m in link.read_messages(topic, 0, 0, EVENTS)]
    return mine, theirs


@pytest.mark.slow
def test_an_export_killed_at_random_points_and_rerun_leaves_kafka_equal_to_the_store(
        kafka, prefix, store_path):
    with Store(store_path) as store:
        store.publish_many("t", [
            Record({"i": i, "pad": "x" * (i % 200)}, key=f"k{i % 97}", headers={"n": str(i)},
                   timestamp_ms=1_650_000_000_000 + i) for i in range(EVENTS)])
    command = [sys.executable, "-m", "spark_queue", "kafka", "export", store_path,
               "--bootstrap", kafka.bootstrap, "--prefix", prefix, "--timeout", "20s"]
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    seen = []
    watcher = KafkaLink(kafka)
    for _ in range(KILLS):
        before = kafka_end(watcher, prefix + "t")
        if before >= EVENTS:
            break
        # Kill once the run has added some records: a random point in what is left.
        target = before + rng.randint(1, max(1, (EVENTS - before) // 3))
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while kafka_end(watcher, prefix + "t") < target and process.poll() is None:
            assert time.monotonic() < deadline, "the export made no progress"
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        seen.append(kafka_end(watcher, prefix + "t"))
    watcher.close()
    assert any(0 < end < EVENTS for end in seen), f"no kill landed mid-export: {seen}"

    [result] = export_topics(store_path, kafka, ["t"], prefix=prefix)

    assert (result.kafka_start, result.kafka_end) == (0, EVENTS)
    mine, theirs = store_and_kafka(store_path, kafka, prefix + "t")
    assert [offset for offset, _ in theirs] == list(range(EVENTS))
    assert [content for _, content in theirs] == mine


@pytest.mark.slow
def test_an_export_across_a_broker_restart_and_rerun_leaves_kafka_equal_to_the_store(
        kafka, prefix, store_path, restart_broker):
    with Store(store_path) as store:
        store.publish_many("t", [Record({"i": i}, key=f"k{i % 13}") for i in range(EVENTS)])
    process = subprocess.Popen(
        [sys.executable, "-m", "spark_queue", "kafka", "export", store_path, "--bootstrap",
         kafka.bootstrap, "--prefix", prefix, "--timeout", "5s"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    watcher = KafkaLink(kafka)
    try:
        deadline = time.monotonic() + 120
        while kafka_end(watcher, prefix + "t") < EVENTS // 10 and process.poll() is None:
            assert time.monotonic() < deadline, "the export made no progress"
            time.sleep(0.02)
    finally:
        watcher.close()
    restart_broker()  # the export retries, or fails saying the broker did not answer
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0 or "no Kafka broker" in err or "rerun" in err, err

    [result] = export_topics(store_path, kafka, ["t"], prefix=prefix)

    assert (result.kafka_start, result.kafka_end) == (0, EVENTS)
    mine, theirs = store_and_kafka(store_path, kafka, prefix + "t")
    assert [content for _, content in theirs] == mine
