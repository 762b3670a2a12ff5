"""A streaming query moves from sqliteq to Kafka with docs/outgrowing.md's recipe, run as
written: the union of its outputs holds every event exactly once."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from spark_queue.kafka.link import KafkaLink
from tests.kafka.conftest import ROOT

DRIVER = ROOT / "tests" / "kafka" / "handoff_driver.py"


@pytest.mark.slow
def test_the_recipe_moves_a_query_to_kafka_reading_every_event_exactly_once(kafka, tmp_path):
    pytest.importorskip("pyspark")
    # The recipe names its topic "clicks": a broker kept from an earlier run must lose it.
    with KafkaLink(kafka) as link:
        if link.partitions("clicks") is not None:
            link.delete_topic("clicks")
    done = subprocess.run([sys.executable, str(DRIVER), str(tmp_path), kafka.bootstrap],
                          capture_output=True, text=True, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-5000:]
    result = json.loads(lines[0].removeprefix("RESULT "))

    assert json.loads(result["starting_offsets"]) == {"clicks": {"0": 300}}
    assert result["store_query"] == list(range(300))
    assert result["kafka_query"] == list(range(300, 600))  # the store's rest, then Kafka's own
    assert result["active"] == 0
    assert result["holds"] == []  # the export's hold on retention, removed by the recipe
    # The exported events read alike through format("kafka") and format("sqliteq"): key,
    # value, topic, partition, offset, timestamp, timestampType, headers.
    assert result["same_rows"] == "same"
