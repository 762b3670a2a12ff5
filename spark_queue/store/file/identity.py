"""The store's identity: a random id written into the store's meta table once (schema
version 7, key :data:`~spark_queue.store.file.meta.STORE_ID`).

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
from spark_queue.store.file import meta
from spark_queue.store.file.connection import HasStoreConnection

KEY = meta.STORE_ID


def store_id(store: HasStoreConnection) -> str:
    """The id of the store file ``store`` has open (32 hex digits), in one read."""
    with store.file.read() as conn:
        value = meta.get(conn, KEY)
    if not value:
        raise CorruptStoreError(
            f"store {store.file.path!r} has no identity ({meta.TABLE} {KEY!r} is missing or "
            f"empty; got {value!r}): another program changed the "
            f"table. Restore it from a backup, or insert a new one: INSERT OR REPLACE INTO "
            f"{meta.TABLE} (key, value) VALUES ('{KEY}', lower(hex(randomblob(16)))) (checkpoints "
            "written against the old id are then refused)."
        )
    return value
