"""The README's Spark quickstart runs as written (paths moved into a temp dir)."""

from __future__ import annotations

import pathlib
import re

import pytest

README = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_readme_spark_quickstart_runs(spark, tmp_path, capsys):
    section = README[README.index("## Quickstart with Spark"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    code = code.replace("/tmp/", f"{tmp_path}/")
    # get_or_create() in the snippet returns the shared test session.
    exec(compile(code, "README.md quickstart", "exec"), {})
    captured = capsys.readouterr().out
    assert "200 clicks on /p/3" in captured
    from spark_queue.store import Store

    with Store(str(tmp_path / "app.sqlite")) as store:
        clicks = [e.value for e in store.read("p3_clicks", 0, limit=1000)]
    assert sorted(c["user"] for c in clicks) == list(range(3, 1000, 5))
