"""Every Spark snippet of the README and docs/ runs as written, on every supported pyspark (the
matrix runs this file from an installed wheel).

A Spark snippet is a ```python block that names ``spark``. Each page's snippets run
in order in one namespace, as a user pastes them into one Python session; the
snippet's ``get_or_create()`` returns the shared test session. Self-contained on
purpose (the matrix runs it with the checkout off ``sys.path``): the block finder
is repeated here rather than imported from tests/.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import textwrap

import pytest

from spark_queue.store import Store

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^( *)```python\n(.*?)^\1```[ \t]*$", re.M | re.S)


def spark_snippets(page: str) -> list[str]:
    """The page's ```python blocks that use a SparkSession (``spark``), dedented, in order."""
    source = (ROOT / page).read_text(encoding="utf-8")
    return [code for code in (textwrap.dedent(m.group(2)) for m in FENCE.finditer(source))
            if re.search(r"\bspark\b", code)]


def pyspark_minor() -> tuple[int, int]:
    import pyspark

    return tuple(int(p) for p in pyspark.__version__.split(".")[:2])


def run_page(page: str) -> dict:
    namespace: dict = {"__name__": "__main__"}
    for number, code in enumerate(spark_snippets(page), start=1):
        exec(compile(code, f"{page} Spark snippet {number}", "exec"), namespace)
    return namespace


def check_readme(ns: dict, out: str, spark) -> None:
    assert "200 clicks on /p/3" in out
    with Store(ns["store_path"]) as store:
        clicks = [e.value for e in store.read("p3_clicks", 0, limit=1000)]
    assert sorted(c["user"] for c in clicks) == list(range(3, 1000, 5))


def check_reading(ns: dict, out: str, spark) -> None:
    assert spark.read.parquet(os.path.join(ns["work"], "clicks")).count() == 100
    assert ns["typed"].count() == 100
    assert "user-2" in out
    # two queries under one name: each its own rows, each its own position
    assert spark.read.parquet(os.path.join(ns["work"], "bronze")).count() == 100
    assert spark.table("feed").count() == 10
    with Store(ns["store_path"]) as store:
        positions = [p for p in store.consumer_positions("clicks") if p.consumer == "bronze"]
        saved = store.committed_offsets("bronze")
    # Spark tells a source a batch is done when it plans the next one, which an
    # availableNow query's last batch never sees: the name holds the lowest position.
    assert len({p.reader for p in positions}) == 2
    assert saved == {"clicks": min(p.next_offset for p in positions)}


def check_writing(ns: dict, out: str, spark) -> None:
    with Store(ns["store_path"]) as store:
        assert sorted(e.value["id"] for e in store.read("results")) == [5, 6, 7, 8, 9]
        jobs = store.queue("thumbnails").peek(10)
    assert sorted(job.payload["image"] for job in jobs) == ["a.png", "b.png"]
    assert "[{'id': 5, 'total': 50.0}" in out


def check_spark_versions(ns: dict, out: str, spark) -> None:
    run = ns["run"]
    assert run.rows == 3000 and max(run.batches) == 1000
    assert run.runs == (1 if pyspark_minor() >= (4, 2) else 4)
    assert spark.read.parquet(ns["table_path"]).count() == 3000


CHECKS = {
    "README.md": check_readme,
    "docs/reading.md": check_reading,
    "docs/writing.md": check_writing,
    "docs/spark-versions.md": check_spark_versions,
}


# Pages whose Spark snippets need more than the shared session, run by a test of their own.
RUN_ELSEWHERE = {
    # Spark's Kafka connector and a broker: the recipe runs in a driver of its own.
    "docs/outgrowing.md":
        "tests/kafka/test_handoff.py::"
        "test_the_recipe_moves_a_query_to_kafka_reading_every_event_exactly_once",
    # A pipeline's code runs inside `spark-pipelines run`, with its spec (yaml) and commands.
    "docs/pipelines.md":
        "tests/smoke/test_pipelines.py::"
        "test_two_pipeline_runs_put_every_event_once_into_the_queue_and_the_topic",
    # pytest files: written out and run by a child pytest with the kit's plugin (the Kafka
    # tier's file on a broker: tests/docs_snippets' runner names its own test).
    "docs/testing.md":
        "tests/smoke/test_kit_docs.py::test_the_testing_pages_tests_pass_as_written",
}


def test_every_page_with_spark_snippets_has_its_check():
    assert sorted(page for page in PAGES
                  if spark_snippets(page) and page not in RUN_ELSEWHERE) == sorted(CHECKS)


# The quickstart says it runs "again and again" (a fresh temp store per run): a rerun in
# the same session prints 200 again (an earlier version printed 400).
RUNS = {"README.md": 2}


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(CHECKS))
def test_the_pages_spark_snippets_run_as_written(page, spark, capsys):
    for _ in range(RUNS.get(page, 1)):
        namespace = run_page(page)
        CHECKS[page](namespace, capsys.readouterr().out, spark)
        assert not spark.streams.active, "a snippet left a streaming query running"
        shutil.rmtree(namespace["work"])
