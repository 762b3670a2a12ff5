"""Where a streaming query that read ``sqliteq`` goes on reading Kafka: its checkpoint's
position as the ``startingOffsets`` JSON of Kafka's source.

Spark's checkpoint keeps, in ``offsets/<batch>``, the end offsets of each planned
micro-batch (a version line, a metadata line, then one line per source; a sqliteq
source writes ``{"topic": next_offset}``, with the store's identity under ``@store``),
and in ``commits/<batch>`` a mark for each batch whose output was committed. The query's
position is the end of its last committed batch: every event before it reached the sink,
none after it did. In an
exported copy (``spark_queue.kafka.export``) that event sits at Kafka offset
``n - shift``, so the position becomes ``{"topic": {"0": n - shift}}``. A batch planned
but not committed (the query stopped in it) is reported: its events are read again
by the Kafka query, which is what the old query would have done on restart.

Needs no Kafka client: this reads files only.
"""

from __future__ import annotations

import json
import os
import pathlib
from dataclasses import dataclass

from spark_queue.connector.offset_json import SourceOffset
from spark_queue.errors import CheckpointError
from spark_queue.store import Store, store_id


@dataclass(frozen=True)
class KafkaStart:
    """A query's position in Kafka's terms (``starting_offsets`` is the option's JSON)."""

    starting_offsets: str
    batch_id: int  # the last committed micro-batch
    store_offsets: dict[str, int]  # its end in the store's numbering
    uncommitted_batch: int | None  # a later batch that was planned but not committed


def _batches(directory: pathlib.Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())


def read_position(
    checkpoint: str | os.PathLike[str], source_index: int | None = None
) -> tuple[int, SourceOffset, int | None]:
    """``(batch_id, offsets, uncommitted_batch)`` of the query's sqliteq source at its last
    committed batch (the offsets as logged: with the store's identity when the source
    recorded one); CheckpointError says what is missing or foreign."""
    root = pathlib.Path(checkpoint)
    planned = _batches(root / "offsets")
    committed = _batches(root / "commits")
    if not planned:
        raise CheckpointError(
            f"{root} holds no offsets/ log of a streaming query: give the query's "
            "checkpointLocation, after it ran at least one micro-batch."
        )
    if not committed:
        raise CheckpointError(
            f"{root}: the query committed no micro-batch yet, so its position is where it "
            "started: give Kafka's source the same startingOffsets the query was given."
        )
    batch = committed[-1]
    lines = (root / "offsets" / str(batch)).read_text(encoding="utf-8").splitlines()
    found: list[tuple[int, SourceOffset]] = []
    for index, line in enumerate(lines[2:]):
        try:
            value = SourceOffset.from_log(json.loads(line))
        except ValueError:
            continue
        if value is not None:
            found.append((index, value))
    if source_index is not None:
        found = [(i, v) for i, v in found if i == source_index]
    if len(found) != 1:
        what = "no" if not found else f"{len(found)}"
        raise CheckpointError(
            f"{root / 'offsets' / str(batch)} holds {what} sqliteq source offsets "
            + (
                "(a checkpoint of another source?)"
                if not found
                else "(the query reads several sources): name one with --source-index"
            )
            + "."
        )
    later = [b for b in planned if b > batch]
    return batch, found[0][1], (later[0] if later else None)


def kafka_starting_offsets(
    checkpoint: str | os.PathLike[str],
    store_path: str | os.PathLike[str],
    *,
    prefix: str = "",
    source_index: int | None = None,
) -> KafkaStart:
    """The ``startingOffsets`` JSON that restarts, on ``format("kafka")`` with a NEW
    checkpoint location, a query whose sqliteq checkpoint is ``checkpoint``: no event lost,
    none read twice. The store's topics must have been exported (each one's shift is
    read from the store); ``prefix`` is the export's Kafka topic prefix."""
    batch, logged, uncommitted = read_position(checkpoint, source_index)
    recorded, offsets = logged.store, logged.positions
    positions: dict[str, dict[str, int]] = {}
    with Store(store_path, create=False, readonly=True) as store:
        if recorded is not None and recorded != store_id(store):
            raise CheckpointError(
                f"the checkpoint holds positions in store {recorded}, but {store_path} is "
                f"store {store_id(store)}, another file: give the store the query read."
            )
        for topic in sorted(offsets):
            shift = store.topic(topic).mirror_shift()
            if shift is None:
                raise CheckpointError(
                    f"store topic {topic!r} (in the checkpoint) was never exported to Kafka: "
                    "run `sqliteq kafka export` first, so its Kafka offsets are known."
                )
            if offsets[topic] < shift:
                raise CheckpointError(
                    f"the query's position in {topic!r} is offset {offsets[topic]}, before the "
                    f"Kafka copy's first event (store offset {shift}): retention removed the "
                    "events in between before the export, so they cannot be read from Kafka."
                )
            positions[prefix + topic] = {"0": offsets[topic] - shift}
    return KafkaStart(
        json.dumps(positions, separators=(",", ":")), batch, dict(offsets), uncommitted
    )
