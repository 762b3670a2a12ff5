"""The docs' pictures, drawn from benchmarks/results.json: ``python -m benchmarks.plots``.

Writes docs/img/: ``soak.png`` (lag, file size and memory over a 30-minute soak),
``edge-box.png`` (the unattended run: file, WAL and the topic against its retention),
``latency.png`` (publish → foreachBatch per read mode, beside Spark's rate source and
Kafka's source), ``drains.png`` (a backlog drained three ways on each pyspark) and
``architecture.png`` (producers → one file → Spark → queue → workers, and where each part
lives on a cluster). Each plot's PNG records, in a text chunk, a hash of the results
sections it drew (``results_sha256``); tests/test_docs_bench.py fails when a section
changed after its plot was drawn, so a rerun benchmark means running this again.

matplotlib (the ``dev`` extra) is imported only when drawing: the hash and the sections
each plot draws are read without it.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import re
import sys
import zlib
from collections.abc import Callable
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results.json"
IMG = ROOT / "docs" / "img"
HASH_KEY = "results_sha256"
LATENCY = "latency: Exactly-once progress tracking (Spark's default)"
DRAINS = tuple(f"drain 10,000 rows, maxRowsPerTrigger=1,000, pyspark {v}, wall clock"
               for v in ("4.0.5", "4.1.4", "4.2.0"))
#: Each plot and the results sections it draws (the diagram draws none).
DRAWN: dict[str, tuple[str, ...]] = {
    "soak.png": ("soak",),
    "edge-box.png": ("an edge box with no prune command",),
    "latency.png": (LATENCY,),
    "drains.png": DRAINS,
    "architecture.png": (),
}


def results() -> dict[str, Any]:
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def sections_hash(names: tuple[str, ...], recorded: dict[str, Any] | None = None) -> str:
    """The hash of the sections a plot draws, as recorded (key order fixed)."""
    recorded = results() if recorded is None else recorded
    drawn = {name: recorded[name] for name in names}
    return hashlib.sha256(json.dumps(drawn, sort_keys=True).encode()).hexdigest()


def png_text(path: pathlib.Path) -> dict[str, str]:
    """A PNG's tEXt/zTXt chunks (what savefig's metadata writes), with the standard library."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    found, at = {}, 8
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            found[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            found[key.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
        at += 12 + length
    return found


# -- drawing (matplotlib) ------------------------------------------------------------------

def _soak(plt: Any, recorded: dict[str, Any]) -> Any:
    figures = recorded["soak"]["figures"]
    samples = sorted((int(re.search(r"\d+", k).group()), v)  # type: ignore[union-attr]
                     for k, v in figures.items() if k.startswith("sample at"))
    minutes = [t / 60 for t, _ in samples]
    rows = [values for _, values in samples]
    # a row: published, lag, queue, file_mb, driver_mb, jvm_mb, jvm_heap_mb, worker_mb
    fig, (lag, size, memory) = plt.subplots(3, 1, figsize=(7, 6.5), sharex=True)
    lag.plot(minutes, [r[1] for r in rows], marker="o")
    lag.set_ylabel("consumer lag\n(events)")
    lag.set_ylim(bottom=0)
    size.plot(minutes, [r[3] for r in rows], marker="o", color="tab:green")
    size.set_ylabel("store file (MB)")
    size.set_ylim(bottom=0)
    for index, label in ((5, "Spark JVM"), (4, "driver (Python)"), (7, "worker"),
                         (6, "JVM heap")):
        memory.plot(minutes, [r[index] for r in rows], marker="o", label=label)
    memory.set_ylabel("memory (MB)")
    memory.set_ylim(bottom=0)
    memory.legend(loc="center right", fontsize=8)
    memory.set_xlabel("minutes")
    fig.suptitle(f"Soak: {figures['published events']:,} events in "
                 f"{figures['minutes']:.0f} minutes ({recorded['soak']['date']})")
    return fig


def _edge_box(plt: Any, recorded: dict[str, Any]) -> Any:
    section = recorded["an edge box with no prune command"]
    figures = section["figures"]
    middle, end = figures["file MB, middle and end"]
    fig, (files, held) = plt.subplots(1, 2, figsize=(8, 3.4))
    files.bar(["file, middle", "file, end", "WAL, at most"],
              [middle, end, figures["WAL MB at most"]], color=["tab:green", "tab:green",
                                                              "tab:orange"])
    files.set_ylabel("MB")
    files.set_title("size on disk")
    held.bar(["at most", "at the end"],
             [figures["topic held / retention window, at most"],
              figures["topic held / retention window, at the end"]], color="tab:blue")
    held.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    held.set_ylabel("× the retention window")
    held.set_title("what the topic holds")
    fig.suptitle(f"Edge box, no prune command: {figures['events published']:,} events, "
                 f"{figures['kills']} kills, every event in Delta once ({section['date']})",
                 fontsize=10)
    fig.tight_layout()
    return fig


def _latency(plt: Any, recorded: dict[str, Any]) -> Any:
    figures = recorded[LATENCY]["figures"]
    paths = [("rate (floor)", "Spark's rate source"),
             ("sqliteq latencyMode=low", "sqliteq, latencyMode=low"),
             ("sqliteq, defaults (latencyMode=auto)", "sqliteq, defaults"),
             ("sqliteq latencyMode=throughput", "sqliteq, latencyMode=throughput"),
             ("Kafka, fetch.max.wait.ms=10", "Kafka, 10 ms fetch wait"),
             ("Kafka, defaults", "Kafka, defaults")]
    p50, p95 = zip(*(figures[f"{key}, FileSystem: p50, p95 ms"] for key, _ in paths),
                   strict=True)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    rows = range(len(paths))
    ax.barh([r + 0.2 for r in rows], p50, height=0.4, label="p50")
    ax.barh([r - 0.2 for r in rows], p95, height=0.4, label="p95", alpha=0.6)
    ax.set_yticks(list(rows), [label for _, label in paths])
    ax.invert_yaxis()
    ax.set_xlabel("publish → rows in foreachBatch (ms), FileSystem checkpoints")
    ax.legend()
    ax.set_title(f"Latency, one row per micro-batch ({recorded[LATENCY]['date']})",
                 fontsize=10)
    fig.tight_layout()
    return fig


def _drains(plt: Any, recorded: dict[str, Any]) -> Any:
    ways = [("availableNow, uncapped (one batch) /s", "availableNow, one batch"),
            ("processing time, capped, stop when caught up /s", "processing time, capped"),
            ("run_available_now, capped /s", "run_available_now, capped")]
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for offset, (key, label) in zip((-0.27, 0, 0.27), ways, strict=True):
        ax.bar([i + offset for i in range(len(DRAINS))],
               [recorded[name]["figures"][key] for name in DRAINS], width=0.27, label=label)
    ax.set_xticks(range(len(DRAINS)), [f"pyspark {name.split('pyspark ')[1].split(',')[0]}"
                                       for name in DRAINS])
    ax.set_ylabel("rows/s (wall clock)")
    ax.set_title("Draining 10,000 rows, maxRowsPerTrigger=1,000")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _architecture(plt: Any, recorded: dict[str, Any]) -> Any:
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    fig, ax = plt.subplots(figsize=(9, 4.6))
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 52)
    ax.axis("off")

    def box(x: float, y: float, w: float, h: float, text: str, color: str) -> None:
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.6", fc=color,
                                    ec="black", lw=1))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=8.5)

    def arrow(a: tuple[float, float], b: tuple[float, float], text: str = "",
              dy: float = 1.4) -> None:
        ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=14, lw=1.2))
        if text:
            ax.text((a[0] + b[0]) / 2, (a[1] + b[1]) / 2 + dy, text, ha="center",
                    fontsize=7.5, style="italic")

    # One machine: the file on its local disk (never a network share), every process that
    # writes it, and Spark's driver; executors and the tables may live anywhere.
    ax.add_patch(FancyBboxPatch((0, 2), 79.5, 47, boxstyle="round,pad=0.4", fc="none",
                                ec="grey", ls="--"))
    ax.text(1, 46.5, "one machine: the store on its local disk, its writers, Spark's driver",
            fontsize=8, color="grey")
    ax.text(90, 46.5, "the cluster", fontsize=8, color="grey", ha="center")
    box(1, 30, 17, 10, "producers\nStore / Producer /\nsqliteq publish /\nany SQLite client",
        "#e8f0fe")
    box(1, 5, 17, 12, "operator\nsqliteq metrics,\nhousekeeping,\nbackup, check", "#f1f3f4")
    box(31, 21, 17, 16, "app.sqlite\none SQLite file (WAL)\ntopics · queues ·\n"
        "consumer offsets ·\nsink ledger", "#fff4d6")
    box(61, 30, 17, 10, "Spark driver\nformat(\"sqliteq\"):\nsource, sink commit",
        "#e6f4ea")
    box(83, 30, 14, 10, "executors\nread ranges,\nencode rows", "#e6f4ea")
    box(61, 5, 17, 10, "workers\nsqliteq worker /\nWorker(handler)", "#fce8e6")
    box(83, 5, 14, 10, "checkpoints,\nDelta tables\n(cluster storage)", "#f1f3f4")
    arrow((18.6, 35), (30.4, 32), "publish")
    arrow((48.6, 34), (60.4, 37), "topic → stream", dy=2.4)
    arrow((60.4, 32), (48.6, 28), "sink: queue jobs", dy=-4.2)
    arrow((78.6, 35), (82.4, 35))
    arrow((45, 20.4), (64, 15.6), "claim / ack", dy=-4.5)
    arrow((90, 29.4), (90, 15.6), "write", dy=0)
    arrow((18.6, 11), (33, 20.4), "scrape / check", dy=-3.5)
    ax.set_title("spark_queue: producers → one file → Spark → queue → workers", fontsize=11)
    return fig


DRAW: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "soak.png": _soak, "edge-box.png": _edge_box, "latency.png": _latency,
    "drains.png": _drains, "architecture.png": _architecture,
}


def draw_all(out: pathlib.Path = IMG) -> list[pathlib.Path]:
    """Draw every picture into ``out``; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recorded = results()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in DRAW.items():
        fig = draw(plt, recorded)
        metadata = {"Software": None, HASH_KEY: sections_hash(DRAWN[name], recorded)}
        fig.savefig(out / name, dpi=110, metadata=metadata)
        plt.close(fig)
        written.append(out / name)
    return written


def main(argv: list[str] | None = None) -> int:
    del argv
    for path in draw_all():
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
