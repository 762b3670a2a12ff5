"""The store's identity: a random id written into ``sq_meta`` once (schema version 7).

A Spark checkpoint holds positions in ONE store file. A path can name another file
later (a store re-created after a cluster restart wiped the driver's disk, a copy of
another store put in its place), and offsets alone cannot tell: the new file may be
shorter, as long or longer. So the source records this id in its offsets and refuses
a checkpoint written against another id. A copy of the file (``sqliteq backup``,
``cp``) keeps the id: it holds the same events at the same offsets. A store created
anew gets a new id.
"""

from __future__ import annotations

from spark_queue.errors import CorruptStoreError
from spark_queue.store.file.connection import HasStoreConnection

KEY = "store_id"


def store_id(store: HasStoreConnection) -> str:
    """The id of the store file ``store`` has open (32 hex digits), in one read."""
    with store.file.read() as conn:
        row = conn.execute("SELECT value FROM sq_meta WHERE key = ?", (KEY,)).fetchone()
    if row is None or not isinstance(row[0], str) or not row[0]:
        raise CorruptStoreError(
            f"store {store.file.path!r} has no identity (sq_meta {KEY!r} is missing or "
            f"empty; got {None if row is None else row[0]!r}): another program changed the "
            f"table. Restore it from a backup, or insert a new one: INSERT OR REPLACE INTO "
            f"sq_meta (key, value) VALUES ('{KEY}', lower(hex(randomblob(16)))) (checkpoints "
            "written against the old id are then refused)."
        )
    return str(row[0])
