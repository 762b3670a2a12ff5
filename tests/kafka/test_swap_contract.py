"""The swap contract on a real broker: Spark's wordcount example's logic and the Kafka
integration guide's read and write patterns give the same rows on ``format("kafka")`` and
``format("sqliteq")`` over the same input, and differ only where docs/kafka.md says so.

One Spark driver (tests/kafka/swap_driver.py) runs every case on both formats in one
session; the tests below read its result. tests/end_to_end/test_kafka_swap.py runs the same
patterns against a store alone (no broker), the shipped example script among them.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys

import pytest

from tests.kafka.conftest import ROOT

DRIVER = ROOT / "tests" / "kafka" / "swap_driver.py"
FIRST_LINES = ["the cat sat", "the dog sat on the cat"]
MORE_LINES = ["a dog", "the end"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def swap(kafka_bootstrap, tmp_path_factory):
    """The driver's result: ``{case: {"kafka": rows, "sqliteq": rows}}``, and the prefix."""
    pytest.importorskip("pyspark")
    import uuid

    workdir = tmp_path_factory.mktemp("swap")
    prefix = f"s{uuid.uuid4().hex[:10]}."
    done = subprocess.run([sys.executable, str(DRIVER), str(workdir), kafka_bootstrap, prefix],
                          capture_output=True, text=True, timeout=1200)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-5000:]
    result = json.loads(lines[0].removeprefix("RESULT "))
    waves = {name: round(s) for name, s in result["waves_s"].items()}
    print(f"\nswap driver: {result['total_s']:.0f} s in all, session and input "
          f"{result['session_s']:.0f} s, waves of cases {waves}")
    return result["cases"], prefix


def both(swap, case: str) -> tuple[list, list]:
    cases, _ = swap
    found = cases[case]
    errors = {k: v for k, v in found.items() if k.endswith("_error")}
    assert not errors, f"{case}: " + "\n".join(f"{k}:\n{v}" for k, v in errors.items())
    return found["kafka"], found["sqliteq"]


def counts(lines: list[str]) -> list[list]:
    return sorted([[word, n] for word, n in collections.Counter(" ".join(lines).split()).items()],
                  key=json.dumps)


@pytest.mark.parametrize("case", ["wordcount_subscribe", "wordcount_pattern",
                                  "wordcount_assign"])
def test_the_wordcount_examples_logic_counts_alike_on_both_formats(swap, case):
    kafka, ours = both(swap, case)
    assert kafka == ours == counts(FIRST_LINES)


def test_the_wordcount_continued_from_its_checkpoint_counts_alike_on_both_formats(swap):
    kafka, ours = both(swap, "wordcount_subscribe_continued")
    assert kafka == ours == counts(FIRST_LINES + MORE_LINES)


def topic1(start: int = 0, end: int = 30) -> list[list]:
    return [[f"k{i}", f"v{i}"] for i in range(start, end)]


def test_stream_reads_of_the_guide_give_the_same_rows_on_both_formats(swap):
    _, p = swap
    expected = {
        "stream_subscribe_one": sorted(topic1(), key=json.dumps),
        "stream_subscribe_several": sorted(topic1() + [[f"j{i}", f"w{i}"] for i in range(3)],
                                           key=json.dumps),
        "stream_pattern": sorted([[p + "topic1", *kv] for kv in topic1()]
                                 + [[p + "topic2", f"j{i}", f"w{i}"] for i in range(3)],
                                 key=json.dumps),
        "stream_assign": [[f"j{i}", f"w{i}", 0] for i in range(3)],
    }
    for case, rows in expected.items():
        kafka, ours = both(swap, case)
        assert kafka == ours == rows, case


def test_headers_read_alike_on_both_formats(swap):
    kafka, ours = both(swap, "stream_headers")
    assert kafka == ours
    with_headers = [row for row in ours if row[2]]
    assert with_headers == sorted([[f"k{i}", f"v{i}", [["h", "b64:" + b64(f"x{i}")]]]
                                   for i in (0, 10, 20)], key=json.dumps)


def b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


def test_every_column_of_kafkas_schema_reads_alike_streaming_and_batch(swap):
    for case in ("stream_every_column", "batch_every_column"):
        kafka, ours = both(swap, case)
        assert kafka == ours, case
        assert len(ours) == 30 + 3 + (case == "batch_every_column")


def test_batch_reads_of_the_guide_give_the_same_rows_on_both_formats(swap):
    _, p = swap
    kafka, ours = both(swap, "batch_subscribe_one")
    assert kafka == ours == sorted(topic1(), key=json.dumps)
    kafka, ours = both(swap, "batch_offsets_json")
    assert kafka == ours == sorted(
        [[p + "topic1", i, f"k{i}", f"v{i}"] for i in range(23, 27)]
        + [[p + "topic2", i, f"j{i}", f"w{i}"] for i in range(3)], key=json.dumps)
    kafka, ours = both(swap, "batch_pattern")
    assert kafka == ours and len(ours) == 33


KEYED = [("a", "1"), ("b", "2"), ("c", "3")]  # the rows the guide's writes write


def one_topic(topic: str) -> list[list]:
    """The keyed rows written to ``topic`` (the sink's topic option)."""
    return [[topic, offset, key, value] for offset, (key, value) in enumerate(KEYED)]


def by_column(first: str, second: str) -> list[list]:
    """The keyed rows routed by their topic column: a and c to ``first``, b to ``second``."""
    return [[first, 0, "a", "1"], [first, 1, "c", "3"], [second, 0, "b", "2"]]


def test_writes_of_the_guide_store_the_same_rows_on_both_formats(swap):
    _, p = swap
    expected = {"write_batch_topic_option": one_topic(p + "bw"),
                "write_batch_topic_column": by_column(p + "outa", p + "outb"),
                "write_stream_topic_option": one_topic(p + "sw"),
                "write_stream_topic_column": by_column(p + "souta", p + "soutb")}
    for case, rows in expected.items():
        kafka, ours = both(swap, case)
        assert kafka == ours == rows, case


def test_a_stream_without_starting_offsets_starts_at_latest_on_kafka_earliest_on_sqliteq(swap):
    kafka, ours = both(swap, "default_starting_offsets")  # docs/kafka.md: on purpose
    assert kafka == []
    assert ours == sorted([[f"v{i}"] for i in range(30)], key=json.dumps)


def test_a_batch_write_without_mode_append_is_refused_by_spark_for_sqliteq_only(swap):
    _, p = swap
    kafka, ours = both(swap, "default_save_mode")  # docs/kafka.md: on purpose
    assert kafka == ["written", one_topic(p + "bwd")]
    assert ours == ["refused", "UNSUPPORTED_DATA_SOURCE_SAVE_MODE"]
