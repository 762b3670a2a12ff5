"""The main job (README command 1): the demo ends by itself with Delta holding every event once,
a rerun says it resumes, and its follow-up commands run as printed."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from spark_queue.store import Store
from tests.end_to_end import drivers

pytestmark = pytest.mark.slow


def demo(directory: str, events: int, rate: int = 1000,
         extra: list[str] | None = None) -> subprocess.Popen:
    return drivers.start(
        "-m", "spark_queue", "demo", "--dir", directory,
        "--events", str(events), "--events-per-second", str(rate), *(extra or []),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def summary_of(output: str) -> dict[str, str]:
    return dict(re.findall(r"^(\w+)\s{2,}(.+)$", output, re.M))


# Its own waits (300 s for a first batch, 600 s for the rerun) bound it, not the suite's 600 s.
@pytest.mark.timeout(300 + 600 + 120)
def test_demo_killed_mid_stream_then_rerun_ends_by_itself_with_every_event_once(tmp_path):
    """Both halves of README command 1: a run that ends by itself and reports, and a
    restart after a SIGKILL that resumes from the checkpoints."""
    directory = str(tmp_path / "demo")
    # The producer provably still runs at the kill, however slow the machine:
    # 1,000,000 events at 200/s take 5,000 s, the wait below is bounded by 300 s.
    first = demo(directory, 1_000_000, rate=200)
    delta_log = os.path.join(directory, "delta", "readings_bronze", "_delta_log")
    deadline = time.monotonic() + 300
    while len(glob.glob(os.path.join(delta_log, "*.json"))) < 2:
        assert first.poll() is None, first.stdout.read()[-3000:]
        assert time.monotonic() < deadline, "the demo committed no Delta batch in time"
        time.sleep(0.2)
    drivers.kill_group(first)
    with Store(os.path.join(directory, "demo.sqlite")) as store:
        published_before = store.topic("readings").latest_offset()
    assert 0 < published_before < 1_000_000

    second = demo(directory, 2000)
    output, _ = second.communicate(timeout=600)
    assert second.returncode == 0, output[-3000:]
    summary = summary_of(output)
    total = str(published_before + 2000)
    assert summary["events_in_topic"] == summary["rows_in_bronze"] == total, output[-3000:]
    assert summary["distinct_offsets_in_bronze"] == total
    assert "lag" in output and "sqliteq topics" in output
    # Spark's and Ivy's own output goes to spark.log, not the terminal.
    assert not re.search(r"(?i)ivy|^:: |resolving dependencies", output, re.M), output[:3000]
    assert os.path.getsize(os.path.join(directory, "spark.log")) > 0
    resumed_progress_lines_never_show_a_rate_or_lag_they_cannot_stand_behind(output)
    # Every follow-up command runs as printed and shows the demo's data.
    shell = output[output.index("Look at the results (shell):"):
                   output.index("Look at the table in Python")]
    commands = [line.strip() for line in shell.splitlines()[1:] if line.strip()]
    shows = ["readings", "demo-bronze", "alerts", '"device"']
    assert [c.split()[1] for c in commands] == ["topics", "consumers", "queue", "tail"]
    for command, expected in zip(commands, shows, strict=True):
        result = subprocess.run(command, shell=True, capture_output=True, text=True)
        assert result.returncode == 0, (command, result.stdout, result.stderr)
        assert expected in result.stdout, (command, result.stdout)
    assert len(result.stdout.splitlines()) == 5  # `tail --from -5`: the last five events
    listed = subprocess.run(commands[1] + " --json", shell=True, capture_output=True, text=True)
    # The demo saves where its queries ended: no phantom lag after "caught up".
    lag = {row["consumer"]: row["lag"] for row in json.loads(listed.stdout)}
    assert lag == {"demo-bronze": 0, "demo-alerts": 0}, lag
    python_follow_up_runs_as_printed_in_a_plain_python(output, published_before + 2000)


def resumed_progress_lines_never_show_a_rate_or_lag_they_cannot_stand_behind(output: str):
    """A rerun's bronze query resumes from its checkpoint: until its first batch of this run
    the line says so (no rate, no lag against 0); after it, no number is negative."""
    lines = re.findall(r"^\[\s*[\d.]+s\] .*$", output, re.M)
    assert lines, output[-3000:]
    assert not any("waiting for batch 1" in line for line in lines), lines
    bronze = [re.search(r"\| (bronze [^|]*) \|", line).group(1) for line in lines]
    for part in bronze:
        assert part == "bronze resuming from its checkpoint" or re.fullmatch(
            r"bronze [\d,]+ rows/s, lag [\d,]+", part), part
    first_rate = next((i for i, part in enumerate(bronze) if "rows/s" in part), len(bronze))
    assert all("resuming" in part for part in bronze[:first_rate]), bronze
    assert not any("resuming" in part for part in bronze[first_rate:]), bronze


def python_follow_up_runs_as_printed_in_a_plain_python(output: str, rows: int):
    """The printed Python lines, pasted into the printed interpreter, with nothing set up:
    no PYSPARK_PYTHON (get_or_create sets the workers' Python), no `spark`, Delta found."""
    header = re.search(r"^Look at the table in Python \(paste into (.+)\):$", output, re.M)
    code = output[header.end():].strip().split("\n\n")[0]
    assert code.splitlines()[0] == "from spark_queue.spark import get_or_create", code
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_QUEUE_CONF_DIR")}
    table_format, table = re.search(r'\.format\("(\w+)"\)\.load\("([^"]+)"\)', code).groups()
    assert table_format == "delta"  # this suite's venv has delta-spark
    code += f"\nprint('rows', spark.read.format({table_format!r}).load({table!r}).count())\n"
    pasted = subprocess.run(header.group(1), shell=True, input=code, env=env,
                            capture_output=True, text=True, timeout=600)
    assert pasted.returncode == 0, pasted.stderr[-3000:]
    assert "|device|celsius|" in pasted.stdout.replace(" ", ""), pasted.stdout[-3000:]
    assert f"rows {rows}" in pasted.stdout, pasted.stdout[-3000:]
    # The JVM's output (Ivy resolving Delta's jars, Spark's warnings) went to the demo's log.
    assert "io.delta#delta-spark" not in pasted.stdout + pasted.stderr, pasted.stderr[-3000:]


@pytest.mark.timeout(2 * 600)
def test_demo_with_a_replica_resumes_exactly_once_on_a_wiped_disk(tmp_path):
    """`sqliteq demo --replica-url`: run, lose the store file (the driver's disk wiped; the
    checkpoints and the table survive), run again: the store comes back from the replica
    with run 1's events at their offsets, and the queries resume on it exactly once."""
    directory = str(tmp_path / "demo")
    store_path = os.path.join(directory, "demo.sqlite")
    replica = f"file://{tmp_path}/replica"
    flag = ["--replica-url", replica]

    def run(events: int) -> str:
        process = demo(directory, events, rate=2000, extra=flag)
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0, output[-3000:]
        return output

    first = run(300)
    assert "restored from" not in first and f"replicating {store_path}" in first
    with Store(store_path, readonly=True) as store:
        run_one = [(e.offset, e.key, e.value) for e in store.read("readings")]
    assert len(run_one) == 300
    for stale in glob.glob(store_path + "*") + glob.glob(os.path.join(directory, ".demo*")):
        if os.path.isdir(stale):
            shutil.rmtree(stale)
        else:
            os.remove(stale)

    second = run(200)
    assert f"store {store_path} was missing: restored from {replica}" in second, second[-3000:]
    summary = summary_of(second)
    assert summary["events_in_topic"] == summary["rows_in_bronze"] == "500", second[-3000:]
    assert summary["distinct_offsets_in_bronze"] == "500"
    with Store(store_path, readonly=True) as store:
        events = store.read("readings")
    assert [(e.offset, e.key, e.value) for e in events[:300]] == run_one
    assert [e.offset for e in events] == list(range(500))
