"""Restoring a store from its replica: ``sqliteq restore STORE --from URL``.

Never over a live store: a STORE that exists is refused (or, with ``if_missing``,
left alone). The restored file is the replica's latest state, or the state at a
time; it keeps its replicated high-water mark, which the replica held before it was
written, so readers of the restored store see nothing a later restore could take back.
"""

from __future__ import annotations

import logging
import os
import shutil

from spark_queue.errors import ReplicationError
from spark_queue.replication import litestream

log = logging.getLogger("spark_queue.replication")

_SIDECARS = ("-wal", "-shm", "-journal")


def restore(
    store: str | os.PathLike[str],
    from_url: str,
    *,
    if_missing: bool = False,
    timestamp_ms: int | None = None,
    litestream_path: str | None = None,
    timeout_s: float = 3600.0,
) -> bool:
    """Restore ``store`` from the replica at ``from_url``; True if a file was restored.

    ``if_missing``: return False, doing nothing, when ``store`` exists or the replica
    holds nothing yet (a first start); without it both are errors. ``timestamp_ms``:
    the state as of that time (within one sync interval of it) instead of the latest.
    """
    path = os.path.abspath(os.fspath(store))
    target = litestream.parse_target(from_url)
    if os.path.exists(path):
        if if_missing:
            log.info("restore: %s exists; nothing restored", path)
            return False
        raise ReplicationError(
            f"store {path!r} exists: restore never overwrites a store. Move it away first "
            "(it may be live), or pass --if-missing to restore only when it is absent."
        )
    stale = [path + s for s in _SIDECARS if os.path.exists(path + s)]
    if stale:
        raise ReplicationError(
            f"store {path!r} is missing but {', '.join(stale)} remain: they belong to a "
            "store that was removed while open. Remove them, then restore."
        )
    # Litestream's local state for a file that is gone describes another file.
    meta = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}-litestream")
    if os.path.isdir(meta):
        shutil.rmtree(meta)
    exe = litestream.binary(litestream_path)
    env = litestream.environment(target)
    with litestream.private_dir() as work:
        config = litestream.write_config(
            work, path, target, sync_interval_ms=litestream.SYNC_INTERVAL_MS
        )
        args = [exe, "restore", "-config", config]
        if if_missing:
            args.append("-if-replica-exists")
        if timestamp_ms is not None:
            args += ["-timestamp", litestream.rfc3339(timestamp_ms)]
        litestream.run_command([*args, path], env, timeout_s=timeout_s, what="restore")
    if not os.path.exists(path):
        if if_missing:
            log.info("restore: the replica %s holds nothing yet; nothing restored",
                     target.url)
            return False
        raise ReplicationError(f"litestream restore wrote no file at {path!r}.")
    os.chmod(path, 0o600)  # as private as a store the project creates
    log.info("restored %s from %s", path, target.url)
    return True
