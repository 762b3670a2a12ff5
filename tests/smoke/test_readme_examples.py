"""The README's Spark quickstart runs as written, on every supported pyspark (the matrix runs
this file from an installed wheel)."""

from __future__ import annotations

import pathlib
import re
import shutil

import pytest

README = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_readme_spark_quickstart_runs(spark, capsys):
    section = README[README.index("## Quickstart with Spark"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    # get_or_create() in the snippet returns the shared test session.
    exec(compile(code, "README.md quickstart", "exec"), namespace)
    assert "200 clicks on /p/3" in capsys.readouterr().out
    from spark_queue.store import Store

    with Store(namespace["store_path"]) as store:
        clicks = [e.value for e in store.read("p3_clicks", 0, limit=1000)]
    assert sorted(c["user"] for c in clicks) == list(range(3, 1000, 5))
    shutil.rmtree(namespace["work"])
