"""The driver's read of the pieces it ships with the plan (``readPath=driver``).

On a cluster this read is the whole source's read, and it runs in one planning
process while the executor path reads on every core: so the pieces are read
in threads, each on a connection of its own (apsw leaves the GIL while SQLite
and the compiled reader run, and pyarrow while it writes IPC). A piece's rows
never change once written, except that retention may remove a topic's front:
a piece that comes back whole is what the caller's snapshot holds, and one that
does not is read again inside that snapshot, which still has every row.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pyarrow as pa

from spark_queue.connector.source.offsets import open_source_store
from spark_queue.connector.source.partition_reader import READ_CHUNK_ROWS
from spark_queue.connector.source.partitions import OffsetRange, reading_cpus
from spark_queue.connector.source.source_options import SourceOptions

if TYPE_CHECKING:
    from spark_queue.store import Store

#: Below this many rows one thread reads everything: opening a connection per
#: thread (a few ms) would cost more than it saves.
PARALLEL_MIN_ROWS = 100_000


# Zstandard (level 1): the shipped bytes cross the planner's socket, the JVM, the task
# and the executor's worker socket, each a copy, and every byte costs ~5 ms a MB on
# that way (1M events of 100 bytes in one local session: 110 MB plain 1,188 ms
# in-batch, LZ4's 13.3 MB 620 ms, zstd's 5.3 MB 572 ms). Against LZ4 it writes a
# little slower and reads ~2x slower (250,000 JSON events: 46 vs 41 ms, 15 vs 6 ms),
# for half the bytes. Executors' IPC reader decompresses by itself.
_COMPRESSED = pa.ipc.IpcWriteOptions(
    compression="zstd" if pa.Codec.is_available("zstd") else
    "lz4" if pa.Codec.is_available("lz4_frame") else None
)


def shipped_pieces(
    store: Store,
    options: SourceOptions,
    pieces: list[OffsetRange],
    payload_format: str,
    headers: bool,
) -> list[bytes]:
    """Arrow IPC stream bytes of every piece, in order, equal to reading each on
    ``store`` (whose snapshot the caller holds)."""
    def on_caller(piece: OffsetRange) -> bytes:
        data = piece_ipc(store, piece, payload_format, headers, whole=False)
        assert data is not None  # noqa: S101 - whole=False never gives up
        return data

    workers = min(reading_cpus(), len(pieces))
    if workers < 2 or sum(p.rows for p in pieces) < PARALLEL_MIN_ROWS:
        return [on_caller(piece) for piece in pieces]
    # Imported here: every stream's planning process imports this module before its
    # first trigger, and most never ship a large batch (BENCHMARKS.md, "Stream start").
    from concurrent.futures import ThreadPoolExecutor

    local, opened, lock = threading.local(), [], threading.Lock()

    def on_own(piece: OffsetRange) -> bytes | None:
        if not hasattr(local, "store"):
            local.store = open_source_store(options)
            with lock:
                opened.append(local.store)
        return piece_ipc(local.store, piece, payload_format, headers, whole=True)

    try:
        with ThreadPoolExecutor(workers, thread_name_prefix="sqliteq-driver-read") as pool:
            shipped = list(pool.map(on_own, pieces))
    finally:
        for own in opened:
            own.close()
    return [
        data if data is not None else on_caller(piece)
        for piece, data in zip(pieces, shipped, strict=True)
    ]


def piece_ipc(
    store: Store, piece: OffsetRange, payload_format: str, headers: bool, whole: bool
) -> bytes | None:
    """The piece as one IPC stream of batches of at most :data:`READ_CHUNK_ROWS` rows;
    None if ``whole`` and a batch came back short (retention removed rows since the
    caller's snapshot, which still has them)."""
    sink = pa.BufferOutputStream()
    writer = None
    try:
        for at in range(piece.start, piece.end, READ_CHUNK_ROWS):
            stop = min(at + READ_CHUNK_ROWS, piece.end)
            table = store.read_arrow_payloads(piece.topic, at, stop, payload_format, headers)
            if whole and table.num_rows != stop - at:
                return None
            if writer is None:
                writer = pa.ipc.new_stream(sink, table.schema, options=_COMPRESSED)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    data: bytes = sink.getvalue().to_pybytes()
    return data

