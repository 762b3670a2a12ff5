"""The Kafka link owns its clients: built at first use, closed once, never used after."""

from __future__ import annotations

import pytest

from spark_queue.errors import KafkaError, KafkaUnavailableError

pytest.importorskip("confluent_kafka")

from spark_queue.kafka.client_config import KafkaSettings  # noqa: E402
from spark_queue.kafka.link import KafkaLink  # noqa: E402
from tests.kafka.test_mirror import closed_port  # noqa: E402


def test_a_link_closes_once_and_builds_no_client_after():
    link = KafkaLink(KafkaSettings(closed_port(), timeout_s=0.5))
    with link, pytest.raises(KafkaUnavailableError, match=r"answered within 0.5 s"):
        link.partitions("t")  # the admin client was built: the broker's silence is named
    link.close()  # a second close does nothing
    with pytest.raises(KafkaError, match="was closed; open a new KafkaLink"):
        link.watermarks("t")
