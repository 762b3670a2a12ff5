"""docs/testing.md's integration tier as written: the page's pipeline function on a real Kafka
broker with ``format("kafka")``, in a child pytest (Spark's Kafka connector through
``spark.jars.packages``)."""

from __future__ import annotations

import re

import pytest

from tests.smoke.test_kit_docs import KAFKA_TIER, run_page_tests


@pytest.mark.slow
def test_the_testing_pages_kafka_tier_passes_on_a_broker(kafka, tmp_path):
    pytest.importorskip("pyspark")
    done = run_page_tests(tmp_path, [KAFKA_TIER], KAFKA_BOOTSTRAP=kafka.bootstrap)
    assert done.returncode == 0, (done.stdout + done.stderr)[-8000:]
    assert re.search(r"\b1 passed\b", done.stdout), done.stdout[-3000:]
