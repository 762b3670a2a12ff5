"""Refuse a directory whose file system cannot hold a live store, before anything is written.

SQLite keeps a store consistent between connections with POSIX record locks
on the file and a shared-memory index (the ``-shm`` file, mapped into every
reader). Network file systems keep neither across hosts, object-store FUSE
mounts (Databricks' ``/dbfs`` and ``/Volumes``, s3fs, gcsfuse, …) cannot
rewrite a page in place, and a file system whose locks are no-ops lets two
writers interleave: each shows up later as "disk I/O error", lost rows or a
damaged file. Two checks, once per device and process:

- the file system type, from ``/proc/self/mountinfo`` (Linux): known network
  types, known remote FUSE types, and the Databricks FUSE mount points;
- a lock probe, where the directory can be written: two open file
  descriptions of a scratch file in that directory take the same
  open-file-description (OFD) lock. The second must be refused; if it is
  granted, the file system does not keep locks. The scratch file is removed
  at once; the store file itself is never opened here, since closing any
  descriptor of a file drops every POSIX lock this process holds on it
  (apsw's too).

The verdict is remembered per mount (device, mount id, type and mount point),
not per device alone: the kernel hands a freed device number to the next
mount, so a tmpfs unmounted a moment ago and a FUSE mount made now can share
one (``tests/end_to_end/test_disk_full.py`` mounts a tmpfs before
``tests/store/file/test_filesystem.py`` mounts its FUSE file system).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import threading
import uuid
from dataclasses import dataclass

from spark_queue.errors import UnsafeFileSystemError

# Types whose locks or shared memory do not hold across hosts.
NETWORK_TYPES = frozenset({
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "afs", "coda", "9p", "ceph", "glusterfs",
    "lustre", "gpfs", "beegfs", "orangefs", "pvfs2", "davfs", "fuse.sshfs", "fuse.s3fs",
    "fuse.gcsfuse", "fuse.goofys", "fuse.rclone", "fuse.blobfuse", "fuse.blobfuse2",
    "fuse.mountpoint-s3", "fuse.juicefs", "fuse.alluxio-fuse", "fuse.davfs", "fuse.glusterfs",
    "fuse.ceph-fuse", "fuse.cephfs",
})
# Databricks mounts cloud storage here through FUSE: DBFS, Unity Catalog Volumes, workspace files.
DATABRICKS_FUSE_MOUNTS = ("/dbfs", "/Volumes", "/Workspace")

_WHAT_TO_DO = (
    "Keep the live store on a local disk (on Databricks the driver's /local_disk0, or /tmp); "
    "copy it to shared storage with `sqliteq backup` and back before the next run."
)


@dataclass(frozen=True)
class Mount:
    mount_point: str
    fs_type: str
    source: str
    mount_id: int = -1


_checked: dict[tuple[int, Mount | None], None] = {}
_lock = threading.Lock()


def check_directory(path: str) -> None:
    """Raise :class:`UnsafeFileSystemError` if the directory of store file ``path`` sits on a
    file system that cannot hold a live SQLite store. Writes nothing but a scratch file that
    is removed at once; probes each mount once per process."""
    directory = os.path.dirname(os.path.abspath(path)) or os.sep
    while not os.path.isdir(directory):  # a store about to be created in new directories
        parent = os.path.dirname(directory)
        if parent == directory:
            return
        directory = parent
    device = os.stat(directory).st_dev
    mount = mount_of(directory, device)
    with _lock:
        if (device, mount) in _checked:
            return
    if mount is not None:
        reason = unsafe_type(mount)
        if reason:
            raise UnsafeFileSystemError(
                f"store file {path!r} is on {mount.mount_point} ({mount.fs_type} from "
                f"{mount.source}), {reason}. {_WHAT_TO_DO}"
            )
    if locks_are_ignored(directory):
        described = f"{mount.fs_type} at {mount.mount_point}" if mount else "its file system"
        raise UnsafeFileSystemError(
            f"store file {path!r} is on {described}, which grants two conflicting locks "
            f"on one file: SQLite could not keep two connections from writing at once. "
            f"{_WHAT_TO_DO}"
        )
    with _lock:
        _checked[device, mount] = None


def unsafe_type(mount: Mount) -> str:
    """Why ``mount`` cannot hold a live store, or "" when its type is fine."""
    if mount.fs_type in NETWORK_TYPES:
        return "a network file system: its locks and shared memory do not hold across hosts"
    is_fuse = mount.fs_type == "fuse" or mount.fs_type.startswith("fuse.")
    if is_fuse and any(mount.mount_point == m or mount.mount_point.startswith(m + "/")
                       for m in DATABRICKS_FUSE_MOUNTS):
        return ("Databricks' FUSE view of cloud storage, which keeps no locks and cannot "
                "rewrite a page of a file in place")
    return ""


def mount_of(directory: str, device: int) -> Mount | None:
    """The mount holding ``directory`` (its device, else the longest mount point above it),
    from ``/proc/self/mountinfo``; None where there is no such file (not Linux)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            mounts = [parsed for line in f if (parsed := parse_mount_line(line)) is not None]
    except OSError:
        return None
    wanted = f"{os.major(device)}:{os.minor(device)}"
    real = os.path.realpath(directory)

    def holds(mount: Mount) -> bool:
        return real == mount.mount_point or real.startswith(mount.mount_point.rstrip("/") + "/")

    by_device = [mount for dev, mount in mounts if dev == wanted]
    candidates = ([m for m in by_device if holds(m)] or by_device
                  or [m for _, m in mounts if holds(m)])
    return max(candidates, key=lambda m: len(m.mount_point), default=None)


def parse_mount_line(line: str) -> tuple[str, Mount] | None:
    # ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS
    fields = line.split()
    if "-" not in fields or len(fields) < 7:
        return None
    tail = fields[fields.index("-") + 1:]
    if len(tail) < 2:
        return None
    mount_id = int(fields[0]) if fields[0].isdigit() else -1
    return fields[2], Mount(_unescape(fields[4]), tail[0], _unescape(tail[1]), mount_id)


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes (\040 ...).
    return field.encode().decode("unicode_escape") if "\\" in field else field


def locks_are_ignored(directory: str) -> bool:
    """True when two open file descriptions of one file in ``directory`` both get the same
    write lock. False where locks work, or where no scratch file can be made to ask."""
    if not hasattr(fcntl, "F_OFD_SETLK"):  # not Linux: nothing to ask this way
        return False
    scratch = os.path.join(directory, f".sqliteq-lockprobe-{os.getpid()}-{uuid.uuid4().hex}")
    try:
        first = os.open(scratch, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return False  # a read-only or foreign directory: the type check is all there is
    try:
        second = os.open(scratch, os.O_RDWR)
        try:
            # struct flock: l_type, l_whence, l_start, l_len, l_pid (0 for OFD locks).
            lock = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
            try:
                fcntl.fcntl(first, fcntl.F_OFD_SETLK, lock)
            except OSError:
                return False  # no OFD locks here: SQLite uses classic ones, untested
            try:
                fcntl.fcntl(second, fcntl.F_OFD_SETLK, lock)
            except OSError as exc:
                return exc.errno not in (errno.EAGAIN, errno.EACCES)
            return True
        finally:
            os.close(second)
    finally:
        os.close(first)
        with contextlib.suppress(OSError):
            os.unlink(scratch)
