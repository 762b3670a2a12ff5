"""A second SQLite library publishes while Store.publish_many does and Spark reads.

Python's stdlib ``sqlite3`` links another SQLite than apsw; it runs the
protocol SQL of docs/file-format.md (tests/store/foreign_producer.py) in processes of its
own, through the sq_publish view and by hand, next to an apsw producer
process, while a streaming query reads the topic.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap
import threading

import pytest

from spark_queue.store import Store
from tests.end_to_end.source_helpers import TIMEOUT_S, stream

FOREIGN_PRODUCER = str(
    pathlib.Path(__file__).resolve().parents[1] / "store" / "foreign_producer.py"
)
APSW_PRODUCER = textwrap.dedent(
    """
    import os, sys, time
    from spark_queue.store import Store
    path, count, batch, release = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    with Store(path, busy_timeout_ms=60_000) as store:
        for start in range(0, count, batch):
            if start >= count // 2 > start - batch:
                print("half", flush=True)
                while not os.path.exists(release):
                    time.sleep(0.01)
            store.publish_many(
                "mixed", [{"p": 0, "seq": s} for s in range(start, min(start + batch, count))]
            )
    print("done", flush=True)
    """
)
PER_PRODUCER = 3000


@pytest.mark.slow
def test_a_second_sqlite_library_publishes_alongside_publish_many_while_spark_reads(
    spark, store_path, tmp_path
):
    with Store(store_path) as store:
        store.topic("mixed").create()
    release = str(tmp_path / "release")
    rows: list[tuple[int, str]] = []
    arrived = threading.Event()

    def collect(df, _batch_id):
        batch = [(r.offset, r.value) for r in df.select("offset", "value").collect()]
        rows.extend(batch)
        if batch:
            arrived.set()

    query = (
        stream(spark, store_path, topic="mixed", valueFormat="string", maxRowsPerTrigger=700)
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .start()
    )
    args = (store_path, PER_PRODUCER, 50, release)
    producers = [
        subprocess.Popen([sys.executable, "-c", APSW_PRODUCER, *map(str, args)],
                         stdout=subprocess.PIPE, text=True),
        *(subprocess.Popen([sys.executable, FOREIGN_PRODUCER, store_path, mode, producer,
                            *map(str, args[1:])], stdout=subprocess.PIPE, text=True)
          for producer, mode in (("1", "view"), ("2", "sql"))),
    ]
    try:
        # Every producer has published half and waits; Spark reads a batch of it;
        # then the second halves are published while the query keeps reading.
        assert [p.stdout.readline().strip() for p in producers] == ["half"] * 3
        assert arrived.wait(TIMEOUT_S), "the query read nothing"
        open(release, "w").close()
        assert [p.communicate(timeout=TIMEOUT_S)[0].split() for p in producers] == [["done"]] * 3
        query.processAllAvailable()
    finally:
        open(release, "a").close()
        query.stop()
        for producer in producers:
            if producer.poll() is None:
                producer.kill()
    total = 3 * PER_PRODUCER
    assert sorted(offset for offset, _ in rows) == list(range(total))
    values = [json.loads(value) for _, value in sorted(rows)]
    for producer in range(3):
        seqs = [v["seq"] for v in values if v["p"] == producer]
        assert seqs == list(range(PER_PRODUCER)), f"producer {producer}"
    with Store(store_path) as store:
        assert store.topic("mixed").bounds() == (0, total)
        assert store.check() == (True, [], ())
