"""The README's Spark quickstart runs as written (paths moved into a temp dir)."""

from __future__ import annotations

import pathlib
import re

import pytest

README = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_readme_spark_quickstart_runs(spark, tmp_path):
    section = README[README.index("## Quickstart with Spark"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    code = code.replace("/tmp/", f"{tmp_path}/")
    # getOrCreate() in the snippet returns the shared test session.
    exec(compile(code, "README.md quickstart", "exec"), {})
    from spark_queue.store import Store

    with Store(str(tmp_path / "app.sqlite")) as store:
        counts = [e.value for e in store.read("page_counts")]
    # Complete mode appends the whole result each trigger (5 triggers of 200 rows),
    # as Kafka's sink does: the newest row per page holds the final count.
    latest = {c["page"]: c["count"] for c in counts}
    assert len(counts) == 25
    assert latest == {f"/p/{i}": 200 for i in range(5)}
