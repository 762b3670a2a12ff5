"""``sqliteq kafka export --follow`` outlives a broker outage while producers go on: it is still
running when the broker returns, then Kafka equals the store offset for offset, and its lag
gauge shows the outage (producers ahead of a stopped broker) and the catch-up."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

import pytest

from spark_queue.kafka.records import from_store_row
from spark_queue.metrics import render
from spark_queue.store import Record, Store
from tests.kafka.test_export import kafka_contents

TIMEOUT_S = 2  # --timeout: every request to the broker
DELIVERY_TIMEOUT_MS = 3000  # message.timeout.ms: every record's delivery


def states(log_path) -> list[str]:
    """The mirror's state changes so far (its --json status lines on stderr)."""
    found = []
    for line in log_path.read_text().splitlines():
        if line.startswith("{"):
            found.append(json.loads(line)["state"])
    return found


def mirror_gauges(store_path: str, prefix: str) -> tuple[int, int] | None:
    """``(offset, lag)`` of the mirror of topic t, as ``sqliteq metrics`` shows them."""
    with Store(store_path) as store:
        text = render(store)
    labels = re.escape(f'{{mirror="sqliteq.mirror.{prefix}",topic="t",kafka_topic="{prefix}t"}}')
    offset = re.search(f"^sqliteq_mirror_offset{labels} (\\d+)$", text, re.M)
    lag = re.search(f"^sqliteq_mirror_lag{labels} (\\d+)$", text, re.M)
    return None if offset is None or lag is None else (int(offset[1]), int(lag[1]))


def wait_for(condition, what: str, process: subprocess.Popen, log_path, limit_s: float = 180):
    deadline = time.monotonic() + limit_s
    while not condition():
        assert process.poll() is None, f"the mirror exited: {log_path.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{what}: {log_path.read_text()[-3000:]}"
        time.sleep(0.05)


@pytest.mark.slow
def test_follow_waits_out_a_broker_outage_and_kafka_then_equals_the_store(
        kafka, prefix, store_path, broker_control, tmp_path):
    """The outage lasts longer than every client timeout the mirror has (--timeout 2s,
    message.timeout.ms 3000): the field's 75 s, shortened. It is over only once the mirror
    has reported waiting for Kafka (a timeout expired) and the broker has started again."""
    def events(start: int, n: int) -> list[Record]:
        return [Record({"i": i}, key=f"k{i % 11}", headers={"n": str(i)},
                       timestamp_ms=1_700_000_000_000 + i) for i in range(start, start + n)]

    with Store(store_path) as store:
        store.publish_many("t", events(0, 2000))
    log_path = tmp_path / "mirror.err"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "spark_queue", "kafka", "export", store_path, "--follow",
             "--poll-ms", "50ms", "--bootstrap", kafka.bootstrap, "--prefix", prefix, "--json",
             "--timeout", f"{TIMEOUT_S}s", "--kafka-config",
             f"message.timeout.ms={DELIVERY_TIMEOUT_MS}"],
            stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        wait_for(lambda: mirror_gauges(store_path, prefix) == (2000, 0), "no first copy",
                 process, log_path)
        assert states(log_path) == ["mirroring"]

        broker_control.stop()
        stopped = time.monotonic()
        with Store(store_path) as store:  # the producers go on
            for start in range(2000, 3500, 500):
                store.publish_many("t", events(start, 500))
        wait_for(lambda: "waiting" in states(log_path), "the mirror never saw the outage",
                 process, log_path)
        assert mirror_gauges(store_path, prefix) == (2000, 1500)  # the lag gauge moved
        broker_control.start()
        assert time.monotonic() - stopped > max(TIMEOUT_S, DELIVERY_TIMEOUT_MS / 1000)

        wait_for(lambda: len(states(log_path)) == 3, "no recovery", process, log_path)
        assert states(log_path) == ["mirroring", "waiting", "mirroring"]  # once per change
        wait_for(lambda: mirror_gauges(store_path, prefix) == (3500, 0), "no catch-up",
                 process, log_path)
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=120)
    assert process.returncode == 0, log_path.read_text()[-3000:]
    [row] = json.loads(out)
    assert (row["kafka_first"], row["kafka_end"], row["records"]) == (0, 3500, 3500)
    with Store(store_path) as store:
        mine = [from_store_row(row) for row in store.read_arrow("t").to_pylist()]
    theirs = kafka_contents(kafka, prefix + "t")
    assert [offset for offset, _ in theirs] == list(range(3500))  # no gap, no duplicate
    assert [content for _, content in theirs] == mine
