"""BENCHMARKS.md's commands are the benchmarks that exist, and they run as written."""

from __future__ import annotations

import json
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from benchmarks import kafka_broker
from benchmarks.__main__ import BENCHMARKS, build_parser

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCHMARKS_MD = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMAND = re.compile(r"`python -m benchmarks ([^`|]+)`")
KAFKA_BENCHMARKS = ("store", "sink", "source", "latency")  # those with --kafka-bootstrap


def test_every_benchmark_has_a_section_with_its_command():
    documented = {shlex.split(args)[0] for args in COMMAND.findall(BENCHMARKS_MD)}
    assert documented == set(BENCHMARKS)


def test_every_documented_benchmark_command_parses_with_its_flags():
    parser = build_parser()
    for args in COMMAND.findall(BENCHMARKS_MD):
        parser.parse_args(shlex.split(args))  # exits (fails the test) on an unknown flag


def test_readme_lists_every_benchmark():
    listed = re.search(r"`python -m benchmarks ([a-z|-]+)`", README).group(1)
    assert listed.split("|") == list(BENCHMARKS)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_benchmark_help_imports_neither_pyspark_nor_kafka(name):
    code = (
        "import sys\n"
        "from benchmarks.__main__ import main\n"
        "try:\n"
        f"    main([{name!r}, '--help'])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "bad = sorted(m for m in sys.modules\n"
        "             if m.split('.')[0] in ('pyspark', 'py4j', 'confluent_kafka'))\n"
        "sys.exit(f'--help imported {bad}' if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--" in result.stdout
    if name == "latency":
        assert "--events" in result.stdout and "--gap-ms" in result.stdout
    if name in KAFKA_BENCHMARKS:
        assert "--kafka-bootstrap" in result.stdout


def test_kafka_is_skipped_with_one_line_when_no_broker_is_given(capsys):
    assert kafka_broker.connect(None) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("kafka: skipped")


def test_the_kafka_comparisons_are_documented_with_the_broker_script():
    assert (ROOT / "scripts" / "kafka-broker").stat().st_mode & 0o111
    assert "## Against Kafka" in BENCHMARKS_MD
    for name in KAFKA_BENCHMARKS:
        assert f"python -m benchmarks {name}" in BENCHMARKS_MD
    kafka_commands = [c for c in COMMAND.findall(BENCHMARKS_MD) if "--kafka-bootstrap" in c]
    assert {shlex.split(c)[0] for c in kafka_commands} == set(KAFKA_BENCHMARKS)


# -- the figures README.md and docs/*.md quote are the benchmarks' (benchmarks/results.json) --

PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
NUMBER = r"\d[\d,]*(?:\.\d+)?"
TO = r"(?:\s*[–-]\s*|\s+to\s+)"  # a range: 1.03–1.18×, 260,000 to 400,000
#: A ratio (0.47×, 1.03–1.18×), a rate (148k jobs/s, 2.0M rows/s, 400,000 ... a second),
#: a start in seconds on a line about starts (~1.8 s), a cost in percent (costs 3%).
RATIO = re.compile(rf"({NUMBER})(?:{TO}({NUMBER}))?×")
RATE = re.compile(rf"({NUMBER})\s*([kM])?(?:{TO}({NUMBER})\s*([kM])?)?\s*(?:[a-z-]+\s+){{0,3}}"
                  r"(?:events|rows|jobs|calls)(?:/s| a second)")
SECONDS = re.compile(rf"([−-]?{NUMBER})\s*s\b")
PERCENT = re.compile(r"(\d+)%")
SCALE = {"k": 1_000, "M": 1_000_000, None: 1, "": 1}

#: Figures quoted in the docs that no current run records, each with the reason; the
#: check skips them. Keep it short: a figure without a run is prose to fix.
UNRECORDED = {
    # Owned by the Producer's branch (#44), which records its rows in the same file.
    ("docs/store.md", "3.5×"): "the Producer's (#44) run: store --section threads",
    ("README.md", "3.5×"): "the Producer's (#44) run: store --section threads",
}


def quoted_figures(text: str) -> list[tuple[str, float, float]]:
    """(as written, low, high) for every performance figure in ``text``: the tolerance is
    half a unit of the last digit written (1.0× holds 0.95 to 1.05)."""
    found = []

    def span(written: str, scale: int = 1) -> tuple[float, float]:
        plain = written.replace(",", "").replace("−", "-")
        decimals = len(plain.split(".")[1]) if "." in plain else 0
        half = 0.5 * 10 ** -decimals * scale
        value = float(plain) * scale
        if scale > 1 or abs(value) >= 1_000:  # 148k, 260,000: a rounded rate, 1% either way
            half = max(half, value * 0.01)
        return value - half, value + half

    for clause in clauses(text):
        for m in RATIO.finditer(clause):
            for g in (m.group(1), m.group(2)):
                if g is not None:
                    found.append((f"{g}×", *span(g)))
        for m in RATE.finditer(clause):
            for g, unit in ((m.group(1), m.group(2) or m.group(4)), (m.group(3), m.group(4))):
                if g is not None:
                    found.append((f"{g}{unit or ''}/s", *span(g, SCALE[unit])))
        if re.search(r"\bstart", clause):
            for m in SECONDS.finditer(clause):
                found.append((f"{m.group(1)} s", *span(m.group(1))))
        if re.search(r"\bcost", clause):
            for m in PERCENT.finditer(clause):  # a cost of N% is a ratio of 1 - N/100
                low, high = span(m.group(1))
                found.append((f"{m.group(1)}%", 1 - high / 100, 1 - low / 100))
    return found


def clauses(text: str) -> list[str]:
    """Table rows, and the clauses of paragraphs with their wrapped lines joined: a figure's
    context ("start", "cost") is its clause, wherever the line breaks."""
    found = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = paragraph.splitlines()
        found += [line for line in lines if line.lstrip().startswith("|")]
        prose = " ".join(line.strip() for line in lines if not line.lstrip().startswith("|"))
        found += re.split(r"(?<=[.;:])\s+(?=[A-Z(`*])|;\s+", prose)
    return found


def recorded_values() -> list[float]:
    values = []
    for section in json.loads(RESULTS.read_text(encoding="utf-8")).values():
        for value in section["figures"].values():
            values.extend(v for v in (value if isinstance(value, list) else [value])
                          if isinstance(v, int | float))
    return values


RESULTS = ROOT / "benchmarks" / "results.json"


def test_every_results_section_says_when_with_what_load_and_how():
    for name, section in json.loads(RESULTS.read_text(encoding="utf-8")).items():
        assert re.fullmatch(r"\d{4}-\d\d-\d\d( \d\d:\d\d)?( UTC)?", section["date"]), name
        assert section["load_average"], name
        assert section["command"].startswith(("python -m benchmarks ", "scripts/")), name
        assert section["figures"], name


def test_every_figure_the_docs_quote_is_in_the_benchmarks_results():
    values = recorded_values()
    missing = []
    for page in PAGES:
        name = page.relative_to(ROOT).as_posix()
        for written, low, high in quoted_figures(page.read_text(encoding="utf-8")):
            if (name, written) in UNRECORDED:
                continue
            if not any(low <= v <= high for v in values):
                missing.append(f"{name}: {written}")
    assert missing == []


def test_the_figure_check_sees_a_figure_no_run_recorded():
    text = ("publish_many 0.90× the limit, 400,000 small keyed events a second, 148k jobs/s,\n"
            "a query start takes ~1.8 s; the controls cost 3% to\n21%; 1.03–1.18× rate\n\n"
            "| row | 2.0M rows/s |\nA 5 s busy timeout.")
    assert [w for w, _, _ in quoted_figures(text)] == [
        "0.90×", "400,000/s", "148k/s", "1.8 s", "3%", "21%", "1.03×", "1.18×", "2.0M/s"]
    [(_, low, high)] = quoted_figures("1.0×")
    assert (low, high) == (0.95, 1.05)
    [(_, low, high)] = quoted_figures("148k jobs/s")
    assert low <= 147_732 <= high and not low <= 140_000 <= high


def test_benchmarks_md_links_no_missing_file():
    for target in re.findall(r"\]\(([^)#]+)", BENCHMARKS_MD):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target


def test_a_benchmark_run_records_its_tables_with_date_load_and_command(tmp_path, monkeypatch,
                                                                       capsys):
    from benchmarks import report, results

    path = tmp_path / "results.json"
    monkeypatch.setattr(results, "RESULTS_PATH", path)
    report.print_table("t", [("raw", 10.0, "raw"), ("ours", 5.0, "raw")])
    assert not path.exists()  # a benchmark imported or called from a test records nothing
    monkeypatch.setattr(results, "_command", None)
    results.start(["store", "--section", "bulk"])
    report.print_table("t (load average 3.0)", [("raw", 10.0, "raw"), ("ours", 5.0, "raw")])
    [(name, section)] = results.read_results(path).items()
    assert name == "t"  # the run's load is in the section, not in its name
    assert section["figures"] == {"raw /s": 10, "ours /s": 5, "ours / raw": 0.5}
    assert section["command"] == "python -m benchmarks store --section bulk"
    assert len(section["load_average"]) == 3 and section["date"].endswith("UTC")


# -- one fact, one figure: a fact quoted in several places says the same thing in each ----

SLOWER = re.compile(r"(\d+(?:\.\d+)?(?:[-–]\d+(?:\.\d+)?)?)\s*(?:x|×)\s+slower")


def test_the_python_fallback_read_is_one_figure_in_the_docs_and_the_code():
    from spark_queue.defaults import PYTHON_READ_SLOWER

    [said] = SLOWER.findall(PYTHON_READ_SLOWER)
    # The fact's places: a page's clauses and the code's lines that speak of Python's read.
    places = [(page, clause) for page in PAGES
              for clause in clauses(page.read_text(encoding="utf-8"))]
    places += [(path, line) for path in [ROOT / "hatch_build.py",
                                         *sorted((ROOT / "spark_queue").rglob("*.py"))]
               for line in path.read_text(encoding="utf-8").splitlines()]
    quoted = {f"{path.relative_to(ROOT)}: {m.group(0)}" for path, place in places
              if "Python" in place for m in SLOWER.finditer(place) if m.group(1) != said}
    assert quoted == set()
    low, high = float(said) - 0.05, float(said) + 0.05  # the recorded ratio, rounded
    assert any(low <= v <= high for v in recorded_values())


def test_the_source_against_kafkas_once_running_is_never_quoted_without_the_wall_clock():
    # 2.14× in-batch and 1.00× from start(): one figure alone misleads a scheduled job.
    for page in PAGES:
        for clause in clauses(page.read_text(encoding="utf-8")):
            if "Kafka" in clause and "once running" in clause and "×" in clause:
                assert "start()" in clause and "1.00×" in clause, (page.name, clause)


def test_no_page_dates_a_figure_by_tonight_or_an_issues_target():
    for page in PAGES[:1] + PAGES[2:]:  # README and docs/ (CHANGELOG names its issues)
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\btonight\b|#\d+'s target", text), page.name


# -- the pictures (docs/img/), drawn from benchmarks/results.json by benchmarks/plots.py ----

def test_every_plot_is_drawn_from_the_results_as_they_are_now():
    from benchmarks import plots

    recorded = plots.results()
    stale = [name for name, sections in plots.DRAWN.items()
             if plots.png_text(plots.IMG / name).get(plots.HASH_KEY)
             != plots.sections_hash(sections, recorded)]
    assert stale == [], f"rerun `python -m benchmarks.plots`: {stale} drew older results"


def test_the_staleness_check_sees_a_changed_result():
    from benchmarks import plots

    recorded = plots.results()
    recorded["soak"] = dict(recorded["soak"], date="another run")
    assert plots.sections_hash(("soak",), recorded) != plots.png_text(
        plots.IMG / "soak.png")[plots.HASH_KEY]


def test_readme_and_the_docs_show_the_architecture_and_the_soak_and_edge_box_plots():
    shown = set()
    for page in PAGES + [ROOT / "BENCHMARKS.md"]:
        shown |= {pathlib.Path(target).name for target in
                  re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", page.read_text(encoding="utf-8"))}
    from benchmarks import plots

    assert shown == set(plots.DRAWN)
    assert "architecture.png" in README and "soak.png" in README and "edge-box.png" in README
