"""A sqliteq checkpoint's position as Kafka's startingOffsets (files only: no broker), and the
Kafka commands without a broker or without the client: one line saying what to do."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from spark_queue.errors import CheckpointError
from spark_queue.kafka.checkpoints import kafka_starting_offsets
from tests.cli.cli_run import one_line_error, run


def write_checkpoint(root, offsets: dict[int, list[str]], commits: list[int]) -> str:
    """Spark's layout: offsets/<batch> (version, metadata, a line per source), commits/<batch>."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch, sources in offsets.items():
        meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}})
        (root / "offsets" / str(batch)).write_text("\n".join(["v1", meta, *sources]))
        (root / "offsets" / f".{batch}.crc").write_text("crc")
    for batch in commits:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return str(root)


def test_the_position_is_the_end_of_the_last_committed_batch_minus_the_shift(store, store_path,
                                                                             tmp_path):
    store.publish_many("a", range(10))
    store.publish_many("b", range(10))
    store.topic("a").fix_mirror_shift(0)
    store.topic("b").fix_mirror_shift(4)
    checkpoint = write_checkpoint(tmp_path / "chk", {
        0: ['{"a":3,"b":5}'], 1: ['{"a":7,"b":9}'], 2: ['{"a":10,"b":10}'],
    }, commits=[0, 1])

    start = kafka_starting_offsets(checkpoint, store_path, prefix="p.")

    assert json.loads(start.starting_offsets) == {"p.a": {"0": 7}, "p.b": {"0": 5}}
    assert (start.batch_id, start.store_offsets, start.uncommitted_batch) == (
        1, {"a": 7, "b": 9}, 2)


def test_a_checkpoint_naming_its_query_under_a_consumer_converts_alike(store, store_path,
                                                                       tmp_path):
    """A source with ``consumer`` carries its query's id (``@reader``) in every offset."""
    store.publish_many("a", range(10))
    store.topic("a").fix_mirror_shift(2)
    checkpoint = write_checkpoint(tmp_path / "chk", {
        0: ['{"@reader":"5c1d9e0a7b3f4e21","a":6}'],
    }, commits=[0])
    start = kafka_starting_offsets(checkpoint, store_path)
    assert json.loads(start.starting_offsets) == {"a": {"0": 4}}
    assert start.store_offsets == {"a": 6}


def test_the_cli_prints_the_json_and_names_an_uncommitted_batch(capsys, store, store_path,
                                                                tmp_path):
    store.publish_many("t", range(5))
    store.topic("t").fix_mirror_shift(2)
    checkpoint = write_checkpoint(tmp_path / "chk", {0: ['{"t":4}'], 1: ['{"t":5}']}, [0])
    code, out, err = run(capsys, "kafka", "starting-offsets", store_path, checkpoint)
    assert code == 0, err
    assert out == '{"t":{"0":2}}\n'
    assert "batch 1 was planned but not committed" in err


@pytest.mark.parametrize(("offsets", "commits", "message"), [
    ({}, [], "holds no offsets/ log"),
    ({0: ['{"t":1}']}, [], "committed no micro-batch yet"),
    ({0: ['{"t":{"0":1}}']}, [0], "holds no sqliteq source offsets"),
    ({0: ['{"t":1}', '{"u":2}']}, [0], "holds 2 sqliteq source offsets"),
])
def test_a_checkpoint_without_one_sqliteq_position_is_named(store, store_path, tmp_path,
                                                            offsets, commits, message):
    store.publish_many("t", range(5))
    store.topic("t").fix_mirror_shift(0)
    root = tmp_path / "chk"
    if offsets:
        write_checkpoint(root, offsets, commits)
    with pytest.raises(CheckpointError, match=message):
        kafka_starting_offsets(str(root), store_path)


def test_a_query_reading_several_sources_names_the_one_to_move(capsys, store, store_path,
                                                               tmp_path):
    store.publish_many("t", range(5))
    store.topic("t").fix_mirror_shift(0)
    checkpoint = write_checkpoint(tmp_path / "chk", {0: ['{"t":2}', '{"other":{"0":7}}',
                                                         '{"t":4}']}, [0])
    code, out, err = run(capsys, "kafka", "starting-offsets", store_path, checkpoint,
                         "--source-index", "2")
    assert (code, out) == (0, '{"t":{"0":4}}\n'), err


def test_a_topic_never_exported_is_named_with_the_command_that_exports_it(store, store_path,
                                                                         tmp_path):
    store.publish_many("t", range(5))
    checkpoint = write_checkpoint(tmp_path / "chk", {0: ['{"t":4}']}, [0])
    with pytest.raises(CheckpointError, match="'t'.*never exported.*sqliteq kafka export"):
        kafka_starting_offsets(checkpoint, store_path)


def test_a_broker_that_does_not_answer_is_one_line_naming_it_and_the_timeout(capsys, store,
                                                                            store_path):
    pytest.importorskip("confluent_kafka")
    store.publish("t", "x")
    err = one_line_error(capsys, "kafka", "export", store_path, "--bootstrap", "127.0.0.1:1",
                         "--timeout", "1s")
    assert "no Kafka broker at 127.0.0.1:1 answered within 1 s" in err
    assert store.topic("t").mirror_shift() is None  # nothing recorded, nothing sent


def test_without_the_kafka_client_the_commands_name_the_extra(store, store_path):
    store.publish("t", "x")
    code = (
        "import sys; sys.modules['confluent_kafka'] = None\n"
        "from spark_queue.cli import main\n"
        f"sys.exit(main(['kafka', 'export', {store_path!r}, '--bootstrap', 'h:1']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "sqliteq kafka export: the Kafka commands need the Kafka client confluent-kafka, "
        "which is not installed here: pip install 'spark-queue[kafka]' (in a checkout: "
        "pip install -e '.[kafka]')"
    ]


def test_the_kafka_package_and_the_cli_help_load_no_kafka_client():
    code = (
        "import sys, spark_queue.kafka, spark_queue.kafka.checkpoints, spark_queue.store\n"
        "from spark_queue.cli import main\n"
        "try:\n    main(['kafka', 'export', '--help'])\nexcept SystemExit:\n    pass\n"
        "sys.exit(1 if 'confluent_kafka' in sys.modules else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("setting", "message"), [
    ("bogus.setting=1", 'refused its settings: No such configuration property: "bogus.setting"'),
    ("no-equals-sign", "--kafka-config takes KEY=VALUE; got 'no-equals-sign'"),
])
def test_a_client_setting_kafka_rejects_is_one_line_naming_it(capsys, store, store_path,
                                                              setting, message):
    pytest.importorskip("confluent_kafka")
    store.publish("t", "x")
    err = one_line_error(capsys, "kafka", "export", store_path, "--bootstrap", "127.0.0.1:1",
                         "--kafka-config", setting)
    assert message in err


def test_a_checkpoint_recording_the_store_s_identity_reads_and_another_store_is_refused(
    store, store_path, tmp_path
):
    from spark_queue.store import store_id

    store.publish_many("t", range(5))
    store.topic("t").fix_mirror_shift(0)
    own = json.dumps({"@store": store_id(store), "t": 4})
    start = kafka_starting_offsets(write_checkpoint(tmp_path / "own", {0: [own]}, [0]),
                                   store_path)
    assert (json.loads(start.starting_offsets), start.store_offsets) == ({"t": {"0": 4}},
                                                                         {"t": 4})
    other = write_checkpoint(tmp_path / "other", {0: ['{"@store": "0123abcd", "t": 4}']}, [0])
    with pytest.raises(CheckpointError, match="positions in store 0123abcd, but .* another file"):
        kafka_starting_offsets(other, store_path)


def test_a_checkpoint_with_the_last_events_fingerprints_reads_as_its_topics(
    store, store_path, tmp_path
):
    from spark_queue.store import store_id

    store.publish_many("t", range(5))
    store.topic("t").fix_mirror_shift(0)
    logged = json.dumps({"@store": store_id(store), "@last": {"t": [3, 1, "00ff00ff00ff00ff"]},
                         "t": 4})
    start = kafka_starting_offsets(write_checkpoint(tmp_path / "chk", {0: [logged]}, [0]),
                                   store_path)
    assert (json.loads(start.starting_offsets), start.store_offsets) == ({"t": {"0": 4}},
                                                                         {"t": 4})
