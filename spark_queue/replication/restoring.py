"""Restoring a store from its replica: ``sqliteq restore STORE --from URL``.

Never over a live store: a STORE that exists is refused (or, with ``if_missing``,
left alone). The restored file is the replica's latest state, or the state at a
time. Everything in it came from the replica, so its replicated high-water mark is
moved up to cover all of it (readers see every restored event at once, and none that a
later restore could take back).

Private from its first byte: Litestream writes into a directory of mode 0700 beside the
store, with umask 077, and the file is renamed into place once whole; an interrupted
restore leaves only that directory (``.STORE-restore-*``), readable by its owner alone.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile

from spark_queue.errors import ReplicationError
from spark_queue.replication import litestream
from spark_queue.store import ReplicaCycles, Store, replica_status
from spark_queue.times import format_time_ms

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
    # 0700, beside the store (one file system: the rename below is atomic); a missing
    # directory is made, as Litestream made it.
    os.makedirs(os.path.dirname(path), exist_ok=True)
    private = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}-restore-",
                               dir=os.path.dirname(path))
    try:
        written = os.path.join(private, os.path.basename(path))
        with litestream.private_dir() as work:
            config = litestream.write_config(
                work, path, target, sync_interval_ms=litestream.SYNC_INTERVAL_MS
            )
            args = [exe, "restore", "-config", config, "-o", written]
            if if_missing:
                args.append("-if-replica-exists")
            if timestamp_ms is not None:
                args += ["-timestamp", litestream.rfc3339(timestamp_ms)]
            litestream.run_command([*args, path], env, timeout_s=timeout_s, what="restore",
                                   umask=0o077)
        if not os.path.exists(written):
            if if_missing:
                log.info("restore: the replica %s holds nothing yet; nothing restored",
                         target.url)
                return False
            raise ReplicationError(f"litestream restore wrote no file at {path!r}.")
        os.chmod(written, 0o600)  # as private as a store the project creates
        os.rename(written, path)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    cycles = ReplicaCycles(path)
    try:
        cycles.mark_restored()
    finally:
        cycles.close()
    log.info("restored %s from %s", path, target.url)
    return True


def describe_restored(path: str | os.PathLike[str]) -> str:
    """What a restore brought back, in one line: each topic's events, and the replica's
    time as far as its events tell (the newest event's publication time)."""
    with Store(path, create=False) as store:
        topics = store.topics()
        newest = [store.read(info.name, info.latest - 1, limit=1)
                  for info in topics if info.count]
    events = sum(info.count for info in topics)
    listed = ", ".join(f"{info.name} {info.earliest}..{info.latest - 1}" if info.count
                       else f"{info.name} empty" for info in topics)
    said = (f"restored {os.fspath(path)}: {len(topics)} topics, {events} events"
            + (f" ({listed})" if listed else ""))
    times = [read[0].timestamp_ms for read in newest if read]
    if times:
        said += f"; the replica as of {format_time_ms(max(times))} (its newest event)"
    status = replica_status(path)
    if status is not None:
        said += (f"; readers see all of it now (replicated to {status.url}: "
                 "`sqliteq replicate` goes on from here)")
    return said
