"""A service writing a replicated store through Python's standard ``sqlite3``, in a process
of its own (a second SQLite library is never loaded beside apsw connections):

    python tests/replication/foreign_writer.py MODE PATH SECONDS RATE

MODE says how the connection is set up:

- ``outbox``: ``spark_queue.outbox.connect(PATH)`` and ``outbox.publish``;
- ``sql``: the plain-SQL protocol of docs/file-format.md by hand (another language's
  client), the replicated store's ``PRAGMA wal_autocheckpoint = 0`` included;
- ``careless``: the protocol without that pragma (SQLite's autocheckpoint every 1,000 WAL
  pages), for measuring what the rule prevents.

Each transaction publishes one event to ``events`` (BEGIN IMMEDIATE ... COMMIT), paced at
RATE a second for SECONDS. Prints ``ready`` once set up, then ``tx N`` every 250
transactions, then ``done N``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time

_APPLICATION_ID = 1397836881
_PAYLOAD = "x" * 200


def _connect(mode: str, path: str) -> sqlite3.Connection:
    if mode == "outbox":
        from spark_queue import outbox

        return outbox.connect(path)
    conn = sqlite3.connect(path, timeout=5, isolation_level=None)
    if conn.execute("PRAGMA application_id").fetchone()[0] != _APPLICATION_ID:
        raise SystemExit(f"{path} is not a store")
    for pragma in ("PRAGMA busy_timeout = 5000", "PRAGMA foreign_keys = ON",
                   "PRAGMA synchronous = NORMAL"):
        conn.execute(pragma)
    replicated = conn.execute(
        "SELECT 1 FROM sq_meta WHERE key = 'replica_url'").fetchone() is not None
    if mode == "sql" and replicated:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
    return conn


def main(mode: str, path: str, seconds: float, rate: float) -> int:
    conn = _connect(mode, path)
    conn.isolation_level = None  # the transactions below are spelled out
    if mode == "outbox":
        from spark_queue import outbox

        def publish(i: int) -> None:
            outbox.publish(conn, "events", {"i": i, "pad": _PAYLOAD})
    else:
        def publish(i: int) -> None:
            conn.execute("INSERT INTO sq_publish (topic, value) VALUES (?, ?)",
                         ("events", json.dumps({"i": i, "pad": _PAYLOAD})))
    print("ready", flush=True)
    start = time.monotonic()
    done = 0
    while time.monotonic() - start < seconds:
        conn.execute("BEGIN IMMEDIATE")
        publish(done)
        conn.execute("COMMIT")
        done += 1
        if done % 250 == 0:
            print(f"tx {done}", flush=True)
        ahead = start + done / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)  # the pace of a service, not a wait for a condition
    print(f"done {done}", flush=True)
    conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])))
