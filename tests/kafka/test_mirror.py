"""The mirror's outage handling without a broker: it waits for one that does not answer,
says so once, gives up only when told to (--give-up-after), and a stop ends the wait."""

from __future__ import annotations

import threading

import pytest

from spark_queue.errors import KafkaUnavailableError
from spark_queue.kafka.client_config import KafkaSettings
from spark_queue.kafka.export import export_topics
from spark_queue.kafka.mirror import WAITING

pytest.importorskip("confluent_kafka")


def closed_port() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"  # nothing listens once it is closed


def test_a_mirror_waits_for_a_broker_that_does_not_answer_and_gives_up_only_when_told(
        store, store_path):
    store.publish_many("t", ["a", "b"])
    seen = []
    with pytest.raises(KafkaUnavailableError, match=r"gave up after .*--give-up-after 1s"):
        export_topics(store_path, KafkaSettings(closed_port(), timeout_s=0.5), follow=True,
                      give_up_after_s=1, on_status=seen.append)
    assert [s.state for s in seen] == [WAITING]  # once, whatever the attempts
    assert "waiting for Kafka" in seen[0].message and seen[0].error


def test_a_stop_ends_the_wait_for_kafka_saying_the_copy_can_be_continued(store, store_path):
    store.publish_many("t", ["a"])
    stop = threading.Event()

    def stop_when_waiting(status) -> None:
        if status.state == WAITING:
            stop.set()

    with pytest.raises(KafkaUnavailableError, match="stopped while waiting for Kafka.*rerun"):
        export_topics(store_path, KafkaSettings(closed_port(), timeout_s=0.5), follow=True,
                      stop=stop, on_status=stop_when_waiting)
