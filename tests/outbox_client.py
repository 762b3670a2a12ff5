"""A service writing its orders with their events, jobs and consumer offsets in one
transaction, in another process: through ``store.transaction()`` (apsw), Python's stdlib
``sqlite3`` or a SQLAlchemy session (each a different SQLite library: never loaded in a
process that holds apsw connections, hence the process of its own).

    python tests/outbox_client.py MODE PATH COUNT

MODE is ``store``, ``sqlite3`` or ``sqlalchemy``. Order ``i`` (0 <= i < COUNT) is one
transaction: the row ``orders(i)``, an event on ``orders``, a job on ``emails`` and
consumer ``billing``'s offset on ``inputs`` moved to ``i + 1``. Every tenth order is first
tried as order ``100000 + i`` and rolled back by an exception. Prints JSON: the offsets and
job ids the calls returned.
"""

from __future__ import annotations

import json
import sys


class Declined(Exception):
    pass


def order(write, i: int) -> tuple[int, int]:
    """One order's writes through ``write`` (the mode's connection), with what they return."""
    write.execute("INSERT INTO orders (id, total) VALUES (?, ?)", (i, 10 * i))
    offset = write.publish("orders", {"id": i})
    job = write.enqueue("emails", {"order": i}, priority=1)
    write.commit_offsets("billing", {"inputs": i % 100_000 + 1})
    return offset, job


class Outbox:
    """spark_queue.outbox bound to one connection or session, shaped like a Transaction."""

    def __init__(self, conn, run_sql) -> None:
        from spark_queue import outbox

        self.conn, self.run_sql, self.outbox = conn, run_sql, outbox

    def execute(self, sql, params):
        return self.run_sql(sql, params)

    def publish(self, topic, value):
        return self.outbox.publish(self.conn, topic, value)

    def enqueue(self, queue, payload, **options):
        return self.outbox.enqueue(self.conn, queue, payload, **options)

    def commit_offsets(self, consumer, offsets):
        return self.outbox.commit_offsets(self.conn, consumer, offsets)


def main(mode: str, path: str, count: int) -> list[tuple[int, int]]:
    returned = []
    if mode == "store":
        from spark_queue.store import Store

        with Store(path) as store:
            for i in range(count):
                if i % 10 == 5:
                    try:
                        with store.transaction() as tx:
                            order(tx, 100_000 + i)
                            raise Declined
                    except Declined:
                        pass
                with store.transaction() as tx:
                    returned.append(order(tx, i))
    elif mode == "sqlite3":
        import sqlite3

        conn = sqlite3.connect(path, timeout=60)
        conn.execute("PRAGMA foreign_keys = ON")
        box = Outbox(conn, conn.execute)
        for i in range(count):
            if i % 10 == 5:
                try:
                    with conn:  # commits at the end, rolls back on an exception
                        order(box, 100_000 + i)
                        raise Declined
                except Declined:
                    pass
            with conn:
                returned.append(order(box, i))
        conn.close()
    else:
        from sqlalchemy import create_engine, text
        from sqlalchemy.orm import Session

        engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": 60})
        with Session(engine) as session:
            box = Outbox(session, lambda sql, params: session.execute(
                text(sql.replace("(?, ?)", "(:a, :b)")), dict(zip("ab", params, strict=True))))
            for i in range(count):
                if i % 10 == 5:
                    try:
                        with session.begin():
                            order(box, 100_000 + i)
                            raise Declined
                    except Declined:
                        pass
                with session.begin():
                    returned.append(order(box, i))
    return returned


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
