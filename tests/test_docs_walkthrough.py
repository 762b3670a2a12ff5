"""The README's CLI walkthrough runs as written: its ``bash`` blocks in order, in an empty dir.

A new user copies these blocks first; a flag renamed or an output changed
must fail here, not in their terminal.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from spark_queue.store import Store

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## A walkthrough with the CLI"


def walkthrough_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end != -1 else len(text)]
    return re.findall(r"```bash\n(.*?)```", section, flags=re.DOTALL)


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory):
    blocks = walkthrough_blocks()
    workdir = tmp_path_factory.mktemp("walkthrough")
    env = dict(os.environ)
    # The `sqliteq` a user gets with the package: the one beside this interpreter.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    script = "set -euo pipefail\n" + "\n".join(blocks)
    done = subprocess.run(
        ["bash", "-c", script], cwd=workdir, env=env, capture_output=True, text=True,
        timeout=300,
    )
    return blocks, workdir, done


def test_the_walkthrough_has_its_steps_in_the_order_a_user_takes_them(walkthrough):
    blocks, _, _ = walkthrough
    text = "\n".join(blocks)
    steps = ["sqliteq init", "sqliteq publish", "sqliteq tail", "sqliteq queue add",
             "sqliteq worker", "sqliteq dlq list"]
    positions = [text.index(step) for step in steps]
    assert positions == sorted(positions)


def test_every_walkthrough_block_runs_as_written(walkthrough):
    _, _, done = walkthrough
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "Traceback" not in done.stderr


def test_the_walkthrough_leaves_what_the_text_says(walkthrough):
    _, workdir, done = walkthrough
    assert "thumbnail for image 7" in done.stdout
    assert "dead-lettered" in done.stderr
    with Store(str(workdir / "app.sqlite"), create=False) as store:
        events = store.read("orders", 0, 100)
        assert [e.offset for e in events] == [0, 1, 2, 3, 4]
        assert [e.value["id"] for e in events] == [1, 2, 3, 4, 5]
        assert events[1].key == "customer-7"
        stats = store.queue("thumbnails").stats()
    # The dead letter was requeued by the last block: ready again, nothing dead.
    assert (stats.ready, stats.dead, stats.leased) == (1, 0, 0)


def test_the_readme_reads_in_a_users_order_and_its_contents_list_every_section():
    text = README.read_text(encoding="utf-8")
    sections = re.findall(r"(?m)^## (.+)$", text)
    contents = text[text.index("## Contents"):]
    contents = contents[:contents.index("\n## ", 1)]
    listed = re.findall(r"(?m)^- \[(.+?)\]\(#([a-z0-9-]+)\)", contents)
    # Every section after the list, in order (GitHub's anchors: lower case, punctuation
    # dropped, spaces to dashes).
    assert [title for title, _ in listed] == sections[sections.index("Contents") + 1:]
    for title, anchor in listed:
        assert anchor == re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")
    # What it is, the two commands, hands-on (the CLI, then Spark), install, the reference.
    order = ["The two commands", "Contents", "A walkthrough with the CLI",
             "Quickstart with Spark", "Install", "A tour"]
    assert [sections.index(s) for s in order] == sorted(sections.index(s) for s in order)
