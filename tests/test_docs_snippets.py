"""Every Python and shell snippet of README.md and docs/ runs in a test, as written.

Who runs what (``test_every_snippet_is_run_by_a_test_that_exists`` keeps the list whole):

- the README walkthrough's ``bash`` blocks: tests/test_docs_walkthrough.py, in order, in
  an empty directory;
- Spark snippets (```python blocks naming ``spark``): tests/smoke/test_doc_examples.py,
  in the shared session, and on every pyspark of the version matrix;
- every other ```python block: here, each page's in order in one empty directory, each
  in a fresh ``python`` of this venv, as a user pastes it;
- the other ``bash`` blocks: a test of their own (``SHELL``);
- docs/outgrowing.md's recipe (Python and bash, needing a broker and Spark's Kafka
  connector): tests/kafka/test_handoff.py, in a Spark driver of its own;
- docs/pipelines.md's pipeline (its spec in yaml, its Python, its commands):
  tests/smoke/test_pipelines.py, through ``spark-pipelines run``;
- docs/testing.md's pytest files: tests/smoke/test_kit_docs.py, in a child pytest with the
  kit's plugin; its Kafka tier's file: tests/kafka/test_kit_kafka_tier.py, on a broker;
- docs/outgrowing.md's systemd unit (```ini) and alert rules (```yaml):
  tests/kafka/test_kafka_cli.py, through the CLI's parser and the metrics' names;
- ```sql blocks (the protocol for other languages): tests/store/test_protocol.py, through
  tests/store/foreign_producer.py, which runs them verbatim.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_queue.store import Store
from tests.docs_pages import ROOT, Block, blocks, pages, section
from tests.smoke.test_doc_examples import RUN_ELSEWHERE, spark_snippets

BIN = str(Path(sys.executable).parent)  # the venv's sqliteq, python and pip
WALKTHROUGH = "## A walkthrough with the CLI"
PYTHON_HERE = "tests/test_docs_snippets.py::test_the_pages_python_snippets_run_as_written"
# Shell blocks outside the walkthrough, by page and first line: the test that runs each.
SHELL = {
    ("README.md", "make demo"):
        "tests/test_docs_snippets.py::test_the_two_commands_are_the_demo_and_the_suite_ci_runs",
    ("README.md", "pip install -e ."):
        "tests/test_docs_snippets.py::test_the_install_block_runs_in_a_fresh_venv",
    ("docs/spark-versions.md", "LOCAL=${LOCAL:-/local_disk0/spark_queue}"):
        "tests/test_docs_snippets.py::test_the_databricks_start_step_restores_and_replicates",
    ("docs/outgrowing.md", "sqliteq kafka export"): RUN_ELSEWHERE["docs/outgrowing.md"],
    ("docs/pipelines.md", "mkdir -p /tmp/orders-pipeline"): RUN_ELSEWHERE["docs/pipelines.md"],
    ("docs/pipelines.md", "cd /tmp/orders-pipeline"): RUN_ELSEWHERE["docs/pipelines.md"],
    ("docs/operations.md", "scripts/promtool test rules"):
        "tests/test_metrics.py::test_every_alert_rule_has_a_promtool_case_and_every_case_passes",
    ("docs/operations.md", "STORE=${STORE:-/var/lib/app/app.sqlite}"):
        "tests/test_docs_snippets.py::test_the_operations_backup_and_restore_run_as_written",
}


# Blocks that are not code a user runs as it is (a unit file, a crontab line, a rules
# file), by page and language: the test that checks each.
CHECKED = {
    ("docs/operations.md", "ini"):
        "tests/test_docs.py::test_every_shipped_unit_passes_systemd_analyze_verify",
    ("docs/operations.md", "text"):
        "tests/test_docs.py::test_the_units_and_crons_commands_are_sqliteq_commands_that_parse",
    ("docs/operations.md", "yaml"):
        "tests/test_docs.py::test_the_page_shows_the_alert_rules_and_the_scrape_config_as_they_are",
}


def is_spark(block: Block) -> bool:
    return block.code in spark_snippets(block.page)


def in_walkthrough(block: Block) -> bool:
    return block.page == "README.md" and block.code.strip() in section(
        "README.md", WALKTHROUGH)


def runner(block: Block) -> str | None:
    """The test that runs ``block`` as written (``path::name``), or None."""
    if block.lang in ("ini", "yaml") and block.page == "docs/outgrowing.md":
        return ("tests/kafka/test_kafka_cli.py::"
                "test_the_service_unit_and_the_alert_rules_name_real_flags_and_metrics")
    if block.page == "docs/testing.md" and block.first_line == "# test_pipeline_kafka.py":
        return ("tests/kafka/test_kit_kafka_tier.py::"
                "test_the_testing_pages_kafka_tier_passes_on_a_broker")
    if block.lang in ("python", "yaml") and block.page in RUN_ELSEWHERE:
        return RUN_ELSEWHERE[block.page]
    if block.lang == "python":
        return ("tests/smoke/test_doc_examples.py::test_the_pages_spark_snippets_run_as_written"
                if is_spark(block) else PYTHON_HERE)
    if block.lang == "bash":
        if in_walkthrough(block):
            return "tests/test_docs_walkthrough.py::test_every_walkthrough_block_runs_as_written"
        return next((test for (page, first), test in SHELL.items()
                     if page == block.page and block.first_line.startswith(first)), None)
    if (block.page, block.lang) in CHECKED:
        return CHECKED[block.page, block.lang]
    if block.lang == "sql":
        title = block.first_line.removeprefix("-- ")
        source = (ROOT / "tests/store/foreign_producer.py").read_text(encoding="utf-8")
        if f'protocol_sql("{title}")' in source:
            return ("tests/store/test_protocol.py::"
                    "test_the_documented_sql_creates_reads_and_saves_consumer_offsets_within_the_rules")
    return None


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def test_every_snippet_is_run_by_a_test_that_exists():
    unrun = [str(block) for block in all_blocks() if runner(block) is None]
    assert not unrun, f"snippets no test runs (give each a language and a runner): {unrun}"
    for test in {runner(block) for block in all_blocks()}:
        path, name = test.split("::")
        source = (ROOT / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {name}\(", source, re.M), test
    # Every SHELL entry still names a block.
    for page, first in SHELL:
        assert any(b.page == page and b.first_line.startswith(first)
                   for b in blocks(page, "bash")), (page, first)


def python_pages() -> list[str]:
    return [page for page in pages() if page not in RUN_ELSEWHERE
            and any(not is_spark(block) for block in blocks(page, "python"))]


def check_store_page(workdir: Path, outputs: list[str]) -> None:
    assert outputs[0].splitlines() == ["0 None {'user': 7, 'page': '/'}",
                                       "1 None {'user': 8, 'page': '/a'}", "2 user-9 raw text"]
    with Store(workdir / "events.sqlite", create=False) as store:
        # The store snippet's three events, then the producer's publish and publish_nowait.
        assert store.topic("clicks").bounds() == (0, 5)
        assert store.committed_offsets("billing") == {"clicks": 3}
        assert [job.payload for job in store.queue("emails").peek(10)] == [{"to": "a@b"}]


def check_queues_page(workdir: Path, outputs: list[str]) -> None:
    assert outputs[0].splitlines() == ["sending {'to': 'a@example.com'}",
                                       "sending plain text job"]
    with Store(workdir / "app.sqlite", create=False) as store:
        stats = store.queue("emails").stats()
        # Both claimed jobs acked (a failed send would be nacked: delayed for a retry);
        # the job enqueued with delay_ms waits.
        assert (stats.ready, stats.leased, stats.delayed, stats.dead) == (0, 0, 1, 0)
        [waiting] = store.queue("emails").peek(10)
    assert (waiting.payload, waiting.attempts) == ({"to": "b@example.com"}, 0)


def check_operations_page(workdir: Path, outputs: list[str]) -> None:
    assert outputs[0].splitlines() == ["0 0 []", "60000 []"]
    with Store(workdir / "app.sqlite", create=False) as store:
        assert store.queue("emails").config().dead_retention_rows == 100_000
        assert store.housekeeping.status().last_run is not None


def check_transactions_page(workdir: Path, outputs: list[str]) -> None:
    assert outputs[0].splitlines() == ["0 1", "(0, 1)"]
    assert outputs[1].splitlines() == ["UnknownTopicError", "['orders']"]
    assert outputs[4] == "{'orders': 3}\n" and outputs[5] == "3\n"
    with Store(workdir / "shop.sqlite", create=False) as store:
        # Orders 1 (store.transaction), 3 (sqlite3) and 4 (SQLAlchemy); 2 rolled back.
        ids = [row[0] for row in store.conn.execute("SELECT id FROM orders ORDER BY id")]
        assert ids == [1, 3, 4] and store.topic("orders").bounds() == (0, 3)
        assert store.topic("revenue-updates").bounds() == (0, 3)
        assert store.topic("receipts").bounds() == (0, 3)
        assert store.conn.execute("SELECT count(*) FROM receipts").fetchall() == [(3,)]
        assert store.queue("emails").stats()[1:5] == (0, 0, 0, 0)


def check_replication_page(workdir: Path, outputs: list[str]) -> None:
    with Store(workdir / "copy.sqlite", create=False) as copy:
        assert copy.topic("orders").bounds() == (0, 1)


def check_schemas_page(workdir: Path, outputs: list[str]) -> None:
    lines = outputs[0].splitlines()
    assert lines[0] == "1 0" and lines[-1] == "(0, 1)"
    assert 'field temp must be DOUBLE (a JSON number); got text "21.5"' in lines[1]
    assert "item 1 of the batch: field device must be STRING" in lines[2]
    first, refusal, history = outputs[1].splitlines()
    assert first == "2" and "field temp changes type from DOUBLE to INT" in refusal
    assert history == "[(1, 0), (2, 1)]"
    assert outputs[2].splitlines()[0] == "[(0, 1), (1, 2)]"
    assert outputs[3] == "True\n"
    with Store(workdir / "sensors.sqlite", create=False) as store:
        assert store.topic("sensors").bounds() == (0, 3)
    lines = outputs[4].splitlines()
    assert lines[:3] == ["0", "True 1", "range(1, 2)"]
    assert "field device must be STRING" in lines[3] and "field temp must be DOUBLE" in lines[3]
    assert lines[4:] == ["Replayed(offsets=[2], still_invalid=[2])", "1"]
    with Store(workdir / "edge.sqlite", create=False) as store:
        assert store.topic("readings").bounds() == (0, 3)
        assert store.topic("readings").quarantine() == []


PYTHON_CHECKS = {"docs/store.md": check_store_page, "docs/queues.md": check_queues_page,
                 "docs/operations.md": check_operations_page,
                 "docs/transactions.md": check_transactions_page,
                 "docs/replication.md": check_replication_page,
                 "docs/schemas.md": check_schemas_page}


def test_every_page_with_python_snippets_has_its_check():
    assert python_pages() == sorted(PYTHON_CHECKS)


@pytest.mark.parametrize("page", sorted(PYTHON_CHECKS))
def test_the_pages_python_snippets_run_as_written(page, tmp_path):
    outputs = []
    for block in blocks(page, "python"):
        if is_spark(block):
            continue
        done = subprocess.run([sys.executable, "-"], input=block.code, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and not done.stderr, f"{block}:\n{done.stderr}"
        outputs.append(done.stdout)
    PYTHON_CHECKS[page](tmp_path, outputs)


def shell_block(page: str, first: str) -> Block:
    [block] = [b for b in blocks(page, "bash") if b.first_line.startswith(first)]
    return block


def run_bash(code: str, cwd: Path, timeout: int = 120, **env: str):
    environment = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), **env)
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + code], cwd=cwd,
                          env=environment, capture_output=True, text=True, timeout=timeout)


def test_the_two_commands_are_the_demo_and_the_suite_ci_runs():
    """``make test`` is what CI runs (tests/test_docs.py checks .ci/run), so every CI run runs
    it as written. ``make demo`` installs .venv and runs ``python -m spark_queue demo``,
    which tests/end_to_end/test_demo.py and tests/smoke/test_demo_cli.py run end to end: a test
    cannot run ``make demo`` itself without reinstalling the venv it runs in."""
    block = shell_block("README.md", "make demo")
    assert [line.split("#")[0].split() for line in block.code.splitlines()] == [
        ["make", "demo"], ["make", "test"]]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    demo = re.search(r"^demo: install\n\t(.+)$", makefile, re.M)
    assert demo and demo.group(1) == "$(PY) -m spark_queue demo $(ARGS)"
    for test in ("tests/end_to_end/test_demo.py", "tests/smoke/test_demo_cli.py"):
        assert '"-m", "spark_queue", "demo"' in (ROOT / test).read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_databricks_start_step_restores_and_replicates(tmp_path):
    """docs/spark-versions.md's start step, twice, on a file:// replica: the second start
    (an emptied local disk) gets back every event the first one published."""
    import signal

    from spark_queue.store import replica_status

    local, replica = tmp_path / "local_disk0", (tmp_path / "Volume").as_uri()
    block = shell_block("docs/spark-versions.md", "LOCAL=")
    for start in range(2):
        done = run_bash(block.code + '\necho "PID=$REPLICATOR"', tmp_path,
                        LOCAL=str(local), REPLICA=replica)
        assert done.returncode == 0, done.stdout + done.stderr
        pid = int(done.stdout.split("PID=")[1].split()[0])
        try:
            store = str(local / "app.sqlite")
            deadline = time.monotonic() + 60
            while (replica_status(store) if os.path.exists(store) else None) is None:
                assert time.monotonic() < deadline, (local / "replicate.log").read_text()
                time.sleep(0.05)
            with Store(store, durability="replicated") as s:
                s.publish("clicks", start)
                assert [e.value for e in s.read("clicks")] == list(range(start + 1))
        finally:
            os.kill(pid, signal.SIGTERM)
            while os.path.exists(f"/proc/{pid}"):  # not our child: init reaps it
                time.sleep(0.05)
        shutil.rmtree(local)  # the cluster ends: its disk is wiped

def test_the_operations_backup_and_restore_run_as_written(tmp_path):
    store_path, backups = tmp_path / "app.sqlite", tmp_path / "backups"
    backups.mkdir()
    with Store(store_path) as store:
        store.publish_many("clicks", ["a", "b"])
    block = shell_block("docs/operations.md", "STORE=")
    # The restore of the block puts the copy back: what is written after the backup goes.
    code = block.code.replace("# Restore:", 'sqliteq publish "$STORE" clicks late\n# Restore:')
    done = run_bash(code, tmp_path, STORE=str(store_path), BACKUPS=str(backups))
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(list(backups.glob("app-*.sqlite"))) == 1
    with Store(store_path, create=False) as restored:
        assert [e.value for e in restored.read("clicks")] == ["a", "b"]
        assert restored.check().ok


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_install_block_runs_in_a_fresh_venv(tmp_path):
    """From a copy of this checkout into a new venv, with pip's index (as a user has it)."""
    checkout = tmp_path / "checkout"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():  # a tracked file deleted in the work tree is skipped
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, checkout / name)
    venv_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv_dir)], check=True)
    env = dict(os.environ, PATH=f"{venv_dir / 'bin'}{os.pathsep}{os.environ['PATH']}",
               VIRTUAL_ENV=str(venv_dir))
    for variable in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        env.pop(variable, None)
    block = shell_block("README.md", "pip install -e .")
    done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + block.code], cwd=checkout,
                          env=env, capture_output=True, text=True, timeout=1400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # What the comments say: the wheel's name, pyspark 4.2.0 pulled by the delta extra.
    assert [p.name for p in (checkout / "dist").iterdir()] == [
        "spark_queue-0.1.0-py3-none-any.whl"]
    probe = subprocess.run(
        [str(venv_dir / "bin" / "python"), "-c",
         "import delta, pyspark, spark_queue.store; print(pyspark.__version__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True)
    assert probe.stdout.split() == ["4.2.0"], probe.stderr
    assert subprocess.run([str(venv_dir / "bin" / "sqliteq"), "--help"], env=env,
                          capture_output=True).returncode == 0
    # The wheel installed last reads with its own compiled build, and says so.
    doctor = subprocess.run([str(venv_dir / "bin" / "sqliteq"), "doctor"], cwd=tmp_path,
                            env=env, capture_output=True, text=True)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "read path: compiled (C)" in doctor.stdout and "site-packages" in doctor.stdout
    assert "builds in this install: manylinux_2_17_x86_64, manylinux_2_17_aarch64, " \
        "macosx_11_0_arm64, macosx_10_13_x86_64" in doctor.stdout, doctor.stdout
