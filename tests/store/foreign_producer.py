"""A producer in another SQLite library: Python's stdlib ``sqlite3``, running the SQL
of docs/file-format.md's "Publishing and consuming from other languages" verbatim.

Run as a script in its own process (it must never share a process with apsw
connections to the store):

    python tests/store/foreign_producer.py PATH MODE PRODUCER COUNT BATCH [RELEASE_FILE]

MODE is ``view`` (INSERT INTO sq_publish) or ``sql`` (the hand-written
protocol). It publishes COUNT JSON values ``{"p": PRODUCER, "seq": i}`` to
topic ``mixed`` in transactions of BATCH events. With RELEASE_FILE it prints
``half`` after publishing half and waits for that file before the rest.
Prints ``done`` at the end. ``python foreign_producer.py PATH protocol``
runs the page's other statements and prints what they returned as JSON;
``python foreign_producer.py PATH limit`` tries the view against a topic's
``max_payload_bytes`` (see ``limit``).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import sqlite3
import sys
import time

PROTOCOL_PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "file-format.md"
APPLICATION_ID = 0x53514C51
TOPIC = "mixed"


def protocol_sql(title: str) -> list[str]:
    """The statements of docs/file-format.md's ```sql block that starts with ``-- title``."""
    for block in re.findall(r"```sql\n(.*?)```", PROTOCOL_PAGE.read_text(encoding="utf-8"),
                            re.S):
        first, _, body = block.partition("\n")
        if first.strip() == f"-- {title}":
            return [stmt.strip() for stmt in body.split(";\n") if stmt.strip()]
    raise LookupError(f"docs/file-format.md has no ```sql block titled {title!r}")


def connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=60)
    conn.execute("PRAGMA busy_timeout = 60000")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id != APPLICATION_ID:
        raise SystemExit(f"{path} is not a spark_queue store (application_id {app_id})")
    return conn


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def event(producer: int, seq: int) -> dict:
    return {
        "topic": TOPIC,
        "key": f"{producer}-{seq}",
        "value": json.dumps({"p": producer, "seq": seq}),
        "value_type": 2,
        "headers": json.dumps({"producer": str(producer)}) if seq % 2 else None,
        "ts_ms": now_ms(),
    }


def publish_view(conn: sqlite3.Connection, rows: list[dict]) -> None:
    [insert] = protocol_sql("publish through the view")
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(insert, rows)
    conn.execute("COMMIT")


def publish_by_hand(conn: sqlite3.Connection, rows: list[dict]) -> None:
    begin, create, select, insert, advance, commit = protocol_sql("publish a batch by hand")
    conn.execute(begin)
    conn.execute(create, {"topic": TOPIC, "now_ms": now_ms()})
    topic_id, nxt = conn.execute(select, {"topic": TOPIC}).fetchone()
    conn.executemany(
        insert, [{**row, "topic_id": topic_id, "offset": nxt + i} for i, row in enumerate(rows)]
    )
    conn.execute(advance, {"next": nxt, "n": len(rows), "topic_id": topic_id})
    conn.execute(commit)


def produce(path: str, mode: str, producer: int, count: int, batch: int, release: str | None):
    publish = {"view": publish_view, "sql": publish_by_hand}[mode]
    conn = connect(path)
    for start in range(0, count, batch):
        if release and start >= count // 2 > start - batch:
            print("half", flush=True)
            while not os.path.exists(release):
                time.sleep(0.01)
        publish(conn, [event(producer, seq) for seq in range(start, min(start + batch, count))])
    conn.close()
    print("done", flush=True)


def protocol(path: str) -> None:
    """Create a topic, read a range, save consumer offsets and enqueue (a duplicate key
    skipped), all with the page's SQL."""
    conn = connect(path)
    [create] = protocol_sql("create a topic")
    conn.execute(create, {"topic": "fresh", "now_ms": now_ms()})
    begin, bounds, select, commit = protocol_sql("read a range")
    conn.execute(begin)
    topic_id, latest = conn.execute(bounds, {"topic": TOPIC}).fetchone()
    rows = conn.execute(select, {"topic_id": topic_id, "start": 1, "end": latest}).fetchall()
    conn.execute(commit)
    [save] = protocol_sql("save a consumer offset")
    saved = []
    for offset in (2, 1, latest + 5):  # forward, back (ignored), beyond latest (refused)
        try:
            conn.execute(save, {"consumer": "foreign", "topic": TOPIC, "next_offset": offset})
        except sqlite3.IntegrityError as exc:
            saved.append(str(exc).split(":")[0])
            continue
        saved.append(conn.execute("SELECT next_offset FROM sq_consumers").fetchone()[0])
    [enqueue] = protocol_sql("enqueue through the view")
    for payload, key in (('{"n": 1}', "once"), ('{"n": 2}', "once"), ('{"n": 3}', None)):
        conn.execute(enqueue, {"queue": "jobs", "payload": payload, "priority": None,
                               "delay_ms": None, "ttl_ms": 60_000, "idempotency_key": key,
                               "max_attempts": None})
    jobs = [json.loads(r[0]) for r in conn.execute("SELECT payload FROM sq_enqueue ORDER BY id")]
    topics = [r[0] for r in conn.execute("SELECT name FROM sq_topics ORDER BY name")]
    shown = [[r[0], {"blob": r[3].hex()} if isinstance(r[3], bytes) else r[3], r[4], r[5]]
             for r in rows]
    print(json.dumps({"latest": latest, "rows": shown,
                      "saved": saved, "topics": topics, "jobs": jobs}))


def limit(path: str) -> None:
    """In one transaction, through the page's view insert, on topic ``limited`` (its
    max_payload_bytes 10): a value at the limit in UTF-8, three over it (text, bytes, JSON),
    then one at the limit and one more; prints each refusal and its error's type."""
    conn = connect(path)
    [insert] = protocol_sql("publish through the view")

    def publish(value: object, value_type: int | None = None) -> None:
        conn.execute(insert, {"topic": "limited", "key": "k" * 50, "value": value,
                              "value_type": value_type, "headers": None, "ts_ms": None})

    refused, types, open_after = [], [], []
    conn.execute("BEGIN IMMEDIATE")
    publish("\u00e9" * 5)
    for value, value_type in (("\u00e9" * 5 + "x", None), (b"\x00" * 11, None),
                              ('{"a": "12345"}', 2)):
        try:
            publish(value, value_type)
        except sqlite3.DatabaseError as error:
            refused.append(str(error))
            types.append(type(error).__name__)
            open_after.append(conn.in_transaction)
    publish(b"\x00" * 10)
    publish("after")
    conn.execute("COMMIT")
    print(json.dumps({"refused": refused, "error_types": types, "in_transaction": open_after}))


if __name__ == "__main__":
    if sys.argv[2] == "protocol":
        protocol(sys.argv[1])
    elif sys.argv[2] == "limit":
        limit(sys.argv[1])
    else:
        produce(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
                sys.argv[6] if len(sys.argv) > 6 else None)
