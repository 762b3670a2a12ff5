"""Store benchmark: publish-many and range reads, against raw apsw on the same table.

The raw side is the limit: pre-built row tuples into ``executemany`` for
writes, ``SELECT ... fetchall()`` into tuples for reads, on a file opened
with the same pragmas and schema. Our side includes payload encoding and
offset assignment (writes) and building Arrow columns (reads).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

from spark_queue.bench.report import best_of, print_table
from spark_queue.store import TEXT, Store
from spark_queue.store.topics import now_ms


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)


def run(args: argparse.Namespace) -> int:
    workdir = tempfile.mkdtemp(prefix="sq-bench-store-")
    try:
        return _run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run(args: argparse.Namespace, workdir: str) -> int:
    n = args.events
    values = [f"{i:012d}" + "x" * (args.value_bytes - 12) for i in range(n)]
    counter = iter(range(1_000_000))

    def fresh() -> Store:
        return Store(os.path.join(workdir, f"s{next(counter)}.sqlite"))

    def ours_publish(store: Store) -> int:
        with store:
            return len(store.publish_many("bench", values))

    def raw_setup() -> tuple[Store, list[tuple]]:
        store = fresh()
        store.create_topic("bench")
        ts = now_ms()
        return store, [(1, i, ts, None, v, TEXT, None) for i, v in enumerate(values)]

    def raw_insert(state: tuple[Store, list[tuple]]) -> int:
        store, rows = state
        with store, store.write() as conn:
            conn.executemany(
                "INSERT INTO sq_events (topic_id, offset, ts_ms, key, value, value_type, headers)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        return len(rows)

    publish = best_of(args.repeats, fresh, ours_publish)
    raw_write = best_of(args.repeats, raw_setup, raw_insert)

    reader = fresh()
    reader.publish_many("bench", values)

    def read_arrow(_: object) -> int:
        return reader.read_arrow("bench", 0).num_rows

    def read_payloads(_: object) -> int:
        return reader.read_arrow_payloads("bench", 0, n).num_rows

    def read_events(_: object) -> int:
        return len(reader.read("bench", 0))

    def raw_select(_: object) -> int:
        return len(
            reader.conn.execute(
                "SELECT offset, ts_ms, key, value, value_type, headers FROM sq_events "
                "WHERE topic_id = 1 AND offset >= 0 AND offset < ? ORDER BY offset",
                (n,),
            ).fetchall()
        )

    none = lambda: None  # noqa: E731
    arrow = best_of(args.repeats, none, read_arrow)
    payloads = best_of(args.repeats, none, read_payloads)
    events = best_of(args.repeats, none, read_events)
    raw_read = best_of(args.repeats, none, raw_select)
    reader.close()

    raw_w, raw_r = "raw apsw executemany (pre-built tuples)", "raw apsw SELECT fetchall (tuples)"
    print_table(
        f"store: {n:,} events of {args.value_bytes} bytes",
        [
            (raw_w, raw_write, raw_w),
            ("Store.publish_many (one transaction)", publish, raw_w),
            (raw_r, raw_read, raw_r),
            ("Store.read_arrow (pyarrow Table)", arrow, raw_r),
            ("Store.read_arrow_payloads (the source's read)", payloads, raw_r),
            ("Store.read (Event objects)", events, raw_r),
        ],
    )
    return 0
