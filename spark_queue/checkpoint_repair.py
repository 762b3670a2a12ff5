"""A Spark checkpoint torn by a power cut, and its exact repair.

Hadoop's local file system never fsyncs a checkpoint file: Spark writes each one to a
temporary file and renames it, and a power cut can keep the rename but lose the data.
The query's newest files are then empty (measured with LazyFS: ``metadata``,
``offsets/N``, ``commits/N`` of 0 bytes), and the query never starts again
(``Incomplete log file``, ``No content to map due to end-of-input``).

:func:`repair_checkpoint` removes exactly that torn tail: each newest entry of
``offsets/`` and ``commits/`` that is empty, does not parse as Spark's format, or does
not match its Hadoop checksum (``.N.crc``), with its checksum file; and a torn
``metadata``. It never removes an entry older than an intact one, and refuses (changing
nothing) what it cannot prove torn: a torn entry below an intact one, a gap in a log, a
commit whose batch's offsets are torn, an empty file under ``state/`` or ``sources/``.
Spark then replays the last batch it planned, and a sink with a ledger (``sqliteq``)
skips the batch it already committed: docs/semantics.md#after-a-power-cut says when
that is exact.

The formats (observed on Spark 4.2): ``offsets/N`` is a version line (``v1``), a JSON line of the
batch's metadata, then one line per source (its offset JSON, or ``-``); ``commits/N`` is
``v1`` and one JSON line; ``metadata`` is one JSON line holding the query's ``id``. A
checksum file ``.NAME.crc`` is ``crc\\0``, the bytes per checksum (4 bytes, big-endian),
then a CRC-32 of each chunk.

Reads local checkpoints only (a path, or a ``file:`` URI); imports neither pyspark nor
the store, so the CLI, the demo and the notebooks call it at start. A query cannot
call it for itself: Spark reads the checkpoint (``metadata`` at ``start()``, the logs
when its thread starts) before any of the connector's code runs, the sink's DataSource
included (built at the first micro-batch; observed on Spark 4.2). What a failed query can
do is say how to repair: :func:`diagnose` looks without changing anything, and
:func:`repair_advice` is the message ``spark_queue.spark.run_available_now`` raises.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import struct
import zlib
from dataclasses import dataclass, field

from spark_queue.errors import CheckpointError

_VERSION_LINE = re.compile(r"v[1-9][0-9]*")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(frozen=True)
class CheckpointRepair:
    """What :func:`repair_checkpoint` found and did (``removed`` paths are relative to
    ``checkpoint``; with ``dry_run`` nothing was changed)."""

    checkpoint: str
    removed: tuple[str, ...] = ()
    why: tuple[str, ...] = ()  # one line per torn file: its name and what is wrong with it
    rewritten: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    dry_run: bool = False

    @property
    def torn(self) -> bool:
        return bool(self.why)

    def __str__(self) -> str:
        if not self.torn:
            return f"{self.checkpoint}: not torn, nothing to repair."
        verb = "would remove" if self.dry_run else "removed"
        lines = [f"{self.checkpoint}: torn by a power cut (files Spark wrote but never synced):"]
        lines += [f"  {line}" for line in self.why]
        lines += [f"{verb}: {path}" for path in self.removed]
        lines += [f"{'would write' if self.dry_run else 'wrote'}: {p}" for p in self.rewritten]
        lines += list(self.notes)
        return "\n".join(lines)


@dataclass
class _Plan:
    root: pathlib.Path
    remove: list[pathlib.Path] = field(default_factory=list)
    why: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    metadata_torn: bool = False


def local_path(checkpoint: str | os.PathLike[str]) -> pathlib.Path:
    """The directory a checkpoint location names: a path or a ``file:`` URI
    (``file:/x``, ``file:///x``); any other scheme is refused."""
    text = os.fspath(checkpoint)
    if text.startswith("file:"):
        text = "/" + text[len("file:"):].lstrip("/")
    elif re.match(r"[A-Za-z][A-Za-z0-9+.-]+:", text):
        raise CheckpointError(
            f"checkpoint {text!r} is not on this machine's disk: the repair reads local "
            "checkpoints only (a path or a file: URI)."
        )
    return pathlib.Path(text)


def _checksum_path(path: pathlib.Path) -> pathlib.Path:
    return path.with_name(f".{path.name}.crc")


def _checksum_problem(path: pathlib.Path, data: bytes) -> str | None:
    """Why the Hadoop checksum file beside ``path`` does not vouch for ``data``, or None
    (it matches, or there is none: Hadoop reads a file without one unchecked)."""
    crc = _checksum_path(path)
    if not crc.exists():
        return None
    raw = crc.read_bytes()
    if len(raw) < 8 or raw[:4] != b"crc\0":
        return f"its checksum file {crc.name} is {len(raw)} bytes, not a checksum"
    (chunk,) = struct.unpack(">i", raw[4:8])
    if chunk <= 0:
        return f"its checksum file {crc.name} names a chunk of {chunk} bytes"
    sums = [data[i:i + chunk] for i in range(0, len(data), chunk)]
    expected = b"".join(struct.pack(">I", zlib.crc32(part)) for part in sums)
    if raw[8:] != expected:
        return f"it does not match its checksum file {crc.name}"
    return None


def _offsets_problem(text: str, sources: int | None) -> str | None:
    lines = text.split("\n")
    if not _VERSION_LINE.fullmatch(lines[0]):
        return f"its first line is {lines[0][:20]!r}, not a version line such as 'v1'"
    if len(lines) < 2:
        return "it ends after its version line"
    for number, line in enumerate(lines[1:], start=2):
        if number > 2 and line == "-":
            continue
        try:
            json.loads(line)
        except ValueError:
            return f"line {number} is not JSON"
    if sources is not None and len(lines) - 2 != sources:
        return f"it holds {len(lines) - 2} source lines where the entry before it holds {sources}"
    return None


def _commit_problem(text: str) -> str | None:
    lines = text.split("\n")
    if not _VERSION_LINE.fullmatch(lines[0]):
        return f"its first line is {lines[0][:20]!r}, not a version line such as 'v1'"
    if len(lines) != 2:
        return f"it has {len(lines)} lines, not a version line and one JSON line"
    try:
        json.loads(lines[1])
    except ValueError:
        return "its second line is not JSON"
    return None


def _metadata_problem(text: str) -> str | None:
    try:
        value = json.loads(text.split("\n")[0])
    except ValueError:
        return "it is not a JSON line"
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        return "it names no query id"
    return None


def _problem(path: pathlib.Path, kind: str, sources: int | None = None) -> str | None:
    data = path.read_bytes()
    if not data:
        return "it is empty (0 bytes)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "it is not UTF-8 text"
    found = {"offsets": lambda: _offsets_problem(text, sources),
             "commits": lambda: _commit_problem(text),
             "metadata": lambda: _metadata_problem(text)}[kind]()
    return found or _checksum_problem(path, data)


def _entries(directory: pathlib.Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())


def _torn_tail(plan: _Plan, log: str) -> list[int]:
    """The batch ids of ``log`` (``offsets`` or ``commits``) that stay; their torn tail
    goes into ``plan``. Refuses a gap, and a torn entry below an intact one."""
    directory = plan.root / log
    ids = _entries(directory)
    gaps = [b for a, b in zip(ids, ids[1:], strict=False) if b != a + 1]
    if gaps:
        raise CheckpointError(
            f"{directory} has a gap before batch {gaps[0]} (entries {ids[0]}..{ids[-1]}): "
            "not what a power cut leaves, so the repair changes nothing. Restore the "
            "checkpoint from a copy, or start the query on a new checkpoint."
        )
    sources: int | None = None
    torn: list[tuple[int, str]] = []
    for batch in ids:
        problem = _problem(directory / str(batch), log, sources)
        if problem is None and torn:
            first, why = torn[0]
            raise CheckpointError(
                f"{directory / str(first)} is torn ({why}) but the later entry "
                f"{directory / str(batch)} is whole: a power cut tears only the newest "
                "files, so the repair cannot prove this one torn and changes nothing. "
                "Restore the checkpoint from a copy, or start the query on a new checkpoint."
            )
        if problem is None and log == "offsets":
            sources = len((directory / str(batch)).read_text(encoding="utf-8").split("\n")) - 2
        elif problem is not None:
            torn.append((batch, problem))
    for batch, why in torn:
        path = directory / str(batch)
        plan.why.append(f"{log}/{batch}: {why}")
        plan.remove += [p for p in (path, _checksum_path(path)) if p.exists()]
    return [b for b in ids if b not in {batch for batch, _ in torn}]


def _empty_files_under(plan: _Plan, name: str) -> None:
    top = plan.root / name
    if not top.is_dir():
        return
    for path in sorted(top.rglob("*")):
        # A hidden ".name.<uuid>....tmp" is a write in flight a kill left behind: Spark writes
        # there and renames, and never reads it, so it is not a torn file of the state.
        if path.name.startswith(".") and path.name.endswith(".tmp"):
            continue
        if path.is_file() and path.stat().st_size == 0:
            raise CheckpointError(
                f"{path} is empty: a torn file of the query's {name}/ (state of a "
                "stateful query, or a source's own log), which the repair cannot rebuild, "
                "so it changes nothing. Restore the checkpoint from a copy, or start the "
                "query on a new checkpoint."
            )


def plan_repair(checkpoint: str | os.PathLike[str]) -> _Plan:
    root = local_path(checkpoint)
    if not root.is_dir():
        raise CheckpointError(f"checkpoint {root} is not a directory.")
    plan = _Plan(root)
    offsets = _torn_tail(plan, "offsets")
    commits = _torn_tail(plan, "commits")
    if commits and (not offsets or commits[-1] > offsets[-1]):
        raise CheckpointError(
            f"{root}: commits/{commits[-1]} is whole but the offsets of that batch are torn "
            "or missing: what the batch read is lost, so the repair changes nothing. Start "
            "the query on a new checkpoint."
        )
    metadata = root / "metadata"
    if metadata.exists():
        problem = _problem(metadata, "metadata")
        if problem is not None:
            plan.metadata_torn = True
            plan.why.append(f"metadata: {problem}")
            plan.remove += [p for p in (metadata, _checksum_path(metadata)) if p.exists()]
    for name in ("state", "sources"):
        _empty_files_under(plan, name)
    if any(p.parent.name == "offsets" for p in plan.remove):
        plan.notes.append(
            "Spark plans the removed offsets batch again on restart; a sink with a ledger "
            "(sqliteq) skips it if it committed it (docs/semantics.md#after-a-power-cut)."
        )
    return plan


def repair_checkpoint(
    checkpoint: str | os.PathLike[str], *, query_id: str | None = None, dry_run: bool = False,
    missing_ok: bool = False,
) -> CheckpointRepair:
    """Remove the torn tail of the Spark checkpoint at ``checkpoint`` (a path or a ``file:``
    URI) and say what was removed; a checkpoint that is not torn is left as it is.

    Raises :class:`~spark_queue.errors.CheckpointError`, changing nothing, for what a power
    cut cannot have left (see the module's docstring). A torn ``metadata`` loses the query's
    id: give ``query_id`` (the id a sqliteq sink's ledger and Spark's log name) to write it
    back, else Spark gives the query a new one on restart. ``dry_run`` only says.
    ``missing_ok``: a checkpoint not made yet (a query's first start) has nothing to repair.
    """
    if missing_ok and not local_path(checkpoint).exists():
        return CheckpointRepair(str(local_path(checkpoint)))
    plan = plan_repair(checkpoint)
    rewritten: list[str] = []
    if query_id is not None:
        if not _UUID.fullmatch(query_id):
            raise CheckpointError(f"query id must be a UUID as Spark writes it; got {query_id!r}.")
        if not plan.metadata_torn and (plan.root / "metadata").exists():
            raise CheckpointError(
                f"{plan.root / 'metadata'} is whole: the query keeps its id, give no query id."
            )
        rewritten.append("metadata")
    elif plan.metadata_torn:
        plan.notes.append(
            "metadata held the query's id: Spark gives the query a NEW id on restart. A "
            "sqliteq sink without the sinkId option goes on under the ledger entry it "
            f"recorded for this checkpoint (the repair leaves {TORN_METADATA_MARK} saying "
            "the id was lost); --query-id ID writes the old id back instead."
        )
    if not dry_run:
        for path in plan.remove:
            path.unlink()
        if query_id is not None:
            _write_metadata(plan.root, query_id)
        elif plan.metadata_torn:
            _mark_torn_metadata(plan.root)
    return CheckpointRepair(
        str(plan.root),
        tuple(str(p.relative_to(plan.root)) for p in plan.remove),
        tuple(plan.why),
        tuple(rewritten),
        tuple(plan.notes),
        dry_run,
    )


def diagnose(checkpoint: str | os.PathLike[str]) -> CheckpointRepair:
    """What :func:`repair_checkpoint` would remove from ``checkpoint``, changing nothing (a
    checkpoint not made yet is not torn). Raises
    :class:`~spark_queue.errors.CheckpointError` for what the repair refuses."""
    return repair_checkpoint(checkpoint, dry_run=True, missing_ok=True)


def repair_advice(found: CheckpointRepair) -> str:
    """The message for a query that failed on the torn checkpoint ``found`` (from
    :func:`diagnose`) describes: its torn files and the exact command that repairs it."""
    quoted = shlex.quote(found.checkpoint)
    lines = [
        f"the query's Spark checkpoint {found.checkpoint} is torn, as a power cut leaves "
        "it (files Spark wrote but never synced), so Spark cannot read it:",
        *(f"  {line}" for line in found.why),
        "Repair it, then run the query again (the repair removes only these files and "
        "their .crc; --dry-run shows them):",
        f"  sqliteq checkpoint repair {quoted}",
        "or in Python: spark_queue.checkpoint_repair.repair_checkpoint("
        f"{found.checkpoint!r})",
        *found.notes,
    ]
    if not any("docs/semantics.md" in note for note in found.notes):
        lines.append("docs/semantics.md#after-a-power-cut says when the replay is exact.")
    return "\n".join(lines)


#: The file a repair leaves in a checkpoint whose ``metadata`` (the query's id) it removed:
#: a sqliteq sink without ``sinkId`` then goes on under the ledger entry the store recorded
#: for the checkpoint's location, not under the new id Spark gives the query
#: (:mod:`spark_queue.connector.sink.writers`). A checkpoint deleted and made anew at the
#: same place has no such file: its query is a new one, and its sink a new ledger entry.
TORN_METADATA_MARK = "sqliteq-torn-metadata"


def metadata_was_torn(checkpoint: str | os.PathLike[str]) -> bool:
    """Whether a repair removed the torn ``metadata`` of the (local) checkpoint."""
    try:
        return (local_path(checkpoint) / TORN_METADATA_MARK).exists()
    except CheckpointError:  # not a local checkpoint: nothing to read
        return False


def _mark_torn_metadata(root: pathlib.Path) -> None:
    # Synced with its directory: the mark must outlive the next cut, like a rewritten id.
    with open(root / TORN_METADATA_MARK, "w", encoding="utf-8") as out:
        out.write("the query's metadata was torn and removed by sqliteq checkpoint repair\n")
        out.flush()
        os.fsync(out.fileno())
    directory = os.open(root, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _write_metadata(root: pathlib.Path, query_id: str) -> None:
    # Spark's own form; synced, so the id survives the next cut.
    temporary = root / ".metadata.repair.tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(json.dumps({"id": query_id}, separators=(",", ":")))
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, root / "metadata")
    crc = _checksum_path(root / "metadata")
    if crc.exists():
        crc.unlink()

