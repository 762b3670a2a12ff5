"""spark_queue.spark without a SparkSession: progress offsets on every pyspark, the drain's rule."""

from __future__ import annotations

import pytest

from spark_queue.errors import OptionError
from spark_queue.spark import query_progress


@pytest.mark.parametrize("value", ['{"orders": 250, "b": 3}', "{'orders': 250, 'b': 3}",
                                   {"orders": 250, "b": 3}])
def test_source_offsets_read_the_same_from_json_from_a_python_repr_and_from_a_dict(value):
    # pyspark 4.2+ reports JSON, 4.0 and 4.1 the Python repr of the parsed offsets.
    assert query_progress.offsets(value) == {"orders": 250, "b": 3}


def test_no_offsets_yet_is_empty_and_anything_else_is_a_named_error():
    assert query_progress.offsets(None) == {}
    # pyspark 4.2's startOffset of a new query's batch 0
    assert query_progress.offsets("null") == {}
    for bad in ("not offsets", "[1, 2]", "{'a': 'x'}"):
        with pytest.raises(ValueError, match="offset"):
            query_progress.offsets(bad)


def test_a_null_offset_a_missing_named_topic_reports_is_left_out():
    # The source reports a subscribed topic that does not exist yet as null (issue 34).
    assert query_progress.offsets('{"clicks": 4, "clickz": null}') == {"clicks": 4}


@pytest.mark.parametrize("value", ['{"@store": "9f0c", "clicks": 4}',
                                   "{'@store': '9f0c', 'clicks': 4}",
                                   '{"@store": "9f0c", "@last": {"clicks": [3, 17, "ab"]}, '
                                   '"clicks": 4}',
                                   '{"@reader": "5c1d", "@store": "9f0c", "clicks": 4}'])
def test_the_store_identity_beside_the_topics_is_left_out(value):
    assert query_progress.offsets(value) == {"clicks": 4}


def test_end_offset_is_0_before_the_first_batch_and_the_topic_s_offset_after():
    assert query_progress.end_offset(None, "t") == 0
    report = {"sources": [{"endOffset": "{'t': 7}"}], "numInputRows": 7}
    assert query_progress.end_offset(report, "t") == 7
    assert query_progress.end_offset(report, "other") == 0


def test_start_offset_is_where_a_batch_began_and_0_for_a_new_querys_first():
    assert query_progress.start_offset({"sources": [{"startOffset": "null"}]}, "t") == 0
    assert query_progress.start_offset({"sources": [{"startOffset": None}]}, "t") == 0
    assert query_progress.start_offset({"sources": [{"startOffset": '{"t": 5000}'}]}, "t") == 5000


def test_input_rows_is_the_total_or_on_spark_connect_the_sum_of_the_sources():
    assert query_progress.input_rows({"numInputRows": 7, "sources": []}) == 7
    # Spark Connect's progress (serverless) has no total, only each source's count: a drain
    # that read the total alone saw no batch there.
    connect = {"numInputRows": None, "sources": [{"numInputRows": 250}, {"numInputRows": 3}]}
    assert query_progress.input_rows(connect) == 253


class FakeQuery:
    def __init__(self, rows: list[int]) -> None:
        self.recentProgress = [{"numInputRows": n} for n in rows]
        self.isActive = False

    def awaitTermination(self) -> None:
        pass


class FakeWriter:
    """Each start() is one availableNow run reading the next scripted batches."""

    def __init__(self, runs: list[list[int]]) -> None:
        self.runs, self.triggers, self.paths = list(runs), [], []

    def trigger(self, **trigger):
        self.triggers.append(trigger)
        return self

    def start(self, path=None):
        self.paths.append(path)
        return FakeQuery(self.runs.pop(0))


@pytest.fixture
def before_4_2(monkeypatch):
    pytest.importorskip("pyspark")
    from spark_queue.connector import compat

    monkeypatch.setattr(compat, "HAS_ADMISSION_CONTROL", False)


def test_before_4_2_the_drain_reruns_until_a_run_reads_less_than_a_full_batch(before_4_2):
    from spark_queue.spark import run_available_now

    writer = FakeWriter([[1000], [1000], [400], [999]])
    run = run_available_now(writer, "/table")
    assert (run.runs, run.batches, run.rows) == (3, (1000, 1000, 400), 2400)
    assert writer.triggers == [{"availableNow": True}] and writer.paths == ["/table"] * 3


def test_before_4_2_an_exact_multiple_ends_with_one_empty_run(before_4_2):
    from spark_queue.spark import run_available_now

    run = run_available_now(FakeWriter([[1000], [1000], [0], [1000]]))
    assert (run.runs, run.batches) == (3, (1000, 1000))


def test_max_runs_bounds_a_drain_that_a_producer_keeps_full(before_4_2):
    from spark_queue.spark import run_available_now

    run = run_available_now(FakeWriter([[1000]] * 10), max_runs=4)
    assert run.runs == 4
    with pytest.raises(OptionError, match="max_runs must be a positive integer"):
        run_available_now(FakeWriter([]), max_runs=0)


def test_from_4_2_one_availablenow_run_is_the_whole_drain(monkeypatch):
    pytest.importorskip("pyspark")
    from spark_queue.connector import compat
    from spark_queue.spark import run_available_now

    monkeypatch.setattr(compat, "HAS_ADMISSION_CONTROL", True)
    run = run_available_now(FakeWriter([[1000, 1000, 5], [7]]))
    assert (run.runs, run.batches) == (1, (1000, 1000, 5))


class FailingWriter(FakeWriter):
    def __init__(self, error: Exception) -> None:
        super().__init__([])
        self.error = error

    def start(self, path=None):
        raise self.error


def test_a_run_failing_on_a_torn_checkpoint_says_how_to_repair_and_any_other_error_is_spark_s(
    tmp_path,
):
    pytest.importorskip("pyspark")
    from spark_queue.errors import CheckpointTornError
    from spark_queue.spark import run_available_now
    from tests.test_checkpoint_repair import make_checkpoint

    root = make_checkpoint(tmp_path / "ckpt", committed=3)
    spark_error = RuntimeError(f"Failed to read log file file:{root}/offsets/3. Incomplete log")
    with pytest.raises(RuntimeError) as unchanged:
        run_available_now(FailingWriter(spark_error))  # the checkpoint is whole: Spark's error
    assert unchanged.value is spark_error
    (root / "offsets" / "3").write_bytes(b"")
    with pytest.raises(CheckpointTornError, match=f"sqliteq checkpoint repair {root}") as torn:
        run_available_now(FailingWriter(spark_error))
    assert torn.value.__cause__ is spark_error and torn.value.torn == ("offsets/3",)
    assert (root / "offsets" / "3").exists()  # it only says


def test_driver_uri_keeps_a_path_on_the_driver_s_disk_whatever_spark_s_default_file_system(
    tmp_path, monkeypatch
):
    from spark_queue.spark import driver_uri

    monkeypatch.chdir(tmp_path)
    assert driver_uri("ckpt/q") == f"file:{tmp_path}/ckpt/q"
    assert driver_uri("file:/local_disk0/x") == "file:/local_disk0/x"


def test_store_table_is_one_table_per_store_file(tmp_path):
    from spark_queue.spark import store_table
    from spark_queue.store import Store, store_id

    path = str(tmp_path / "app.sqlite")
    with Store(path) as store:
        identity = store_id(store)
    assert store_table("dbfs:/tmp/t/", "orders", path) == f"dbfs:/tmp/t/orders-{identity}"
