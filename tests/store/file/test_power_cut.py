"""A power cut on the store: what each durability level keeps (issue 54).

A power cut loses every write the file system was not made to keep: the page cache
goes, what was fsynced stays. :class:`CutVFS` is that in one process. It sits under
apsw as the default VFS; each file's writes go to an in-memory copy shared by every
handle on the file (the page cache), and reach the real file only at ``xSync``. At
a chosen I/O call (the cut) it refuses that call and every later write or sync;
the connections are then closed (their writes go nowhere) and the real files hold
exactly what was synced: what a machine finds on its disk after the power comes back.

Each case runs a workload until the cut, records what each call acknowledged, and
opens the file anew with SQLite's own VFS. At ``full``, every acknowledged write is
there. At ``normal`` writes may be lost, but the file is consistent:
integrity ok, offsets dense from 0, no consumer offset past its topic's end, and the
next publish gets the next offset. The cut points are spread over the workload's I/O
calls (first the count of a run without a cut), so they fall inside commits, WAL
appends and checkpoints alike; each cut costs a few milliseconds, all in one process.

The VFS is checked first: with ``synchronous=OFF`` nothing is ever synced and every
acknowledged row is lost; with ``FULL`` none is.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable

import apsw
import pytest

from spark_queue.store import Producer, Store

CUTS_PER_CASE = 20
# ~0.1 s a cut (most of it SQLite's own fsyncs when the file is checked): ~20 s in all.
pytestmark = pytest.mark.slow


class _Cache:
    """One file's page cache: what was written (``live``), and the ranges not synced."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.live = bytearray()
        if os.path.exists(path):
            with open(path, "rb") as held:
                self.live = bytearray(held.read())
        self.dirty: list[tuple[int, int]] = []


class CutFile(apsw.VFSFile):
    """A file whose writes stay in the cache until synced. The base (unix) file keeps
    the locks and the WAL's shared memory, as SQLite's own VFS would."""

    def __init__(self, vfs: CutVFS, name: apsw.URIFilename | str, flags: list[int]) -> None:
        super().__init__("unix", name, flags)
        self.vfs = vfs
        self.cache = vfs.cache(name.filename() if isinstance(name, apsw.URIFilename) else name)

    def xRead(self, amount: int, offset: int) -> bytes:
        return bytes(self.cache.live[offset:offset + amount])

    def xWrite(self, data: bytes, offset: int) -> None:
        self.vfs.tick()
        live = self.cache.live
        if len(live) < offset:
            live.extend(b"\0" * (offset - len(live)))
        live[offset:offset + len(data)] = data
        self.cache.dirty.append((offset, len(data)))

    def xTruncate(self, newsize: int) -> None:
        self.vfs.tick()
        del self.cache.live[newsize:]

    def xFileSize(self) -> int:
        return len(self.cache.live)

    def xSync(self, flags: int) -> None:
        self.vfs.tick()
        self.vfs.syncs += 1
        cache = self.cache
        fd = os.open(cache.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            for offset, length in cache.dirty:
                os.pwrite(fd, bytes(cache.live[offset:offset + length]), offset)
            os.ftruncate(fd, len(cache.live))
        finally:
            os.close(fd)
        cache.dirty.clear()


class CutVFS(apsw.VFS):
    """The default VFS while it lives: cuts the power at I/O call number ``cut_at``."""

    def __init__(self, cut_at: int | None = None) -> None:
        super().__init__("powercut", base="unix", makedefault=True)
        self.cut_at = cut_at
        self.calls = 0
        self.syncs = 0
        self.cut = False
        self._caches: dict[str, _Cache] = {}
        self._lock = threading.Lock()

    def cache(self, path: str) -> _Cache:
        with self._lock:
            if path not in self._caches:
                self._caches[path] = _Cache(path)
            return self._caches[path]

    def tick(self) -> None:
        with self._lock:
            self.calls += 1
            if self.cut_at is not None and self.calls >= self.cut_at:
                self.cut = True
            if self.cut:
                raise apsw.IOError("power cut")

    def xOpen(self, name: apsw.URIFilename | str | None, flags: list[int]) -> apsw.VFSFile:
        if name is None:  # a temporary file: gone at a cut anyway
            return apsw.VFSFile("unix", name, flags)
        return CutFile(self, name, flags)

    def xDelete(self, filename: str, syncdir: bool) -> None:
        self.tick()
        with self._lock:
            self._caches.pop(filename, None)
        super().xDelete(filename, syncdir)


# A workload writes through ``open_store`` and records in ``acked`` what each call
# acknowledged; it runs until the cut makes a call fail.
Workload = Callable[[Callable[[], Store], str, list], None]


def _publish(open_store, path, acked):
    with open_store() as store:
        for i in range(200):
            store.publish("t", {"i": i})
            acked.append(("t", i))


def _publish_many(open_store, path, acked):
    with open_store() as store:
        for batch in range(40):
            offsets = store.publish_many("t", [{"i": batch * 10 + j} for j in range(10)])
            acked.extend(("t", batch * 10 + j) for j in range(10) if offsets)


def _producer(open_store, path, acked):
    with open_store() as store:
        store.topic("t").create()
    producer = Producer(path, durability=open_store.durability)  # type: ignore[attr-defined]
    lock = threading.Lock()

    def send(thread: int) -> None:
        for i in range(50):
            value = thread * 1000 + i
            try:
                producer.publish("t", {"i": value})
            except Exception:
                return
            with lock:
                acked.append(("t", value))

    threads = [threading.Thread(target=send, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with contextlib.suppress(Exception):
        producer.close()


def _queue(open_store, path, acked):
    with open_store() as store:
        queue = store.queue("q")
        for i in range(60):
            queue.enqueue({"i": i})
            acked.append(("enqueued", i))
            if i % 3 == 2:
                for job in queue.claim(2):
                    queue.ack(job)
                    acked.append(("acked", job.payload["i"]))


def _offsets(open_store, path, acked):
    with open_store() as store:
        store.publish_many("t", [{"i": i} for i in range(100)])
        acked.extend(("t", i) for i in range(100))
        for n in range(1, 101):
            store.commit_offsets("c", {"t": n})
            acked.append(("offset", n))


CASES: dict[str, Workload] = {
    "publish": _publish, "publish_many": _publish_many, "Producer": _producer,
    "queue": _queue, "consumer offsets": _offsets,
}


def _run(path: str, workload: Workload, durability: str, cut_at: int | None,
         pragma: str | None = None) -> tuple[list, CutVFS]:
    """Run ``workload`` on a fresh store until the cut; what it acknowledged, and the VFS."""
    vfs = CutVFS(cut_at)
    acked: list = []
    opened: list[Store] = []

    def open_store() -> Store:
        store = Store(path, durability=durability)
        if pragma:
            store.conn.execute(pragma)
        opened.append(store)
        return store

    open_store.durability = durability  # type: ignore[attr-defined]
    try:
        workload(open_store, path, acked)
    except Exception:
        if not vfs.cut:
            raise
    finally:
        for store in opened:
            with contextlib.suppress(Exception):
                store.close()
        vfs.cut = True  # whatever is still open writes nowhere now
        vfs.unregister()
    return acked, vfs


def _check_consistent(path: str) -> dict:
    """The file as SQLite's own VFS finds it after the cut: consistent, and what it holds."""
    with Store(path) as store:
        assert store.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        held: dict = {"events": set(), "jobs": set(), "offset": 0}
        for info in store.topics():
            events = list(store.read(info.name, 0, 1_000_000))
            assert [e.offset for e in events] == list(range(len(events))), "offsets not dense"
            held["events"] |= {(info.name, e.value["i"]) for e in events}
            for consumer in store.consumers(info.name):
                assert consumer.next_offset <= len(events), "a consumer offset past the data"
            next_offset = store.publish(info.name, {"i": -1})
            assert next_offset == len(events), "the next write is not at the next offset"
        held["offset"] = store.committed_offsets("c").get("t", 0)
        if store.queue("q").exists():
            queue = store.queue("q")
            held["jobs"] = {job.payload["i"] for job in queue.peek(1000)}
    return held


def _lost(acked: list, held: dict) -> list:
    lost = []
    finished = {i for kind, i in acked if kind == "acked"}
    for kind, value in acked:
        if kind == "offset":
            if held["offset"] < value:
                lost.append((kind, value))
        elif kind == "enqueued":
            if value not in held["jobs"] and value not in finished:
                lost.append((kind, value))
        elif kind == "acked":
            if value in held["jobs"]:
                lost.append((kind, value))  # an acknowledged ack undone: the job is back
        elif (kind, value) not in held["events"]:
            lost.append((kind, value))
    return lost


def _io_calls(tmp_path, workload: Workload, durability: str) -> int:
    path = str(tmp_path / "count.sqlite")
    _, vfs = _run(path, workload, durability, None)
    return vfs.calls


@pytest.mark.parametrize(("pragma", "kept"), [("PRAGMA synchronous=OFF", False),
                                              ("PRAGMA synchronous=FULL", True)])
def test_the_cut_vfs_loses_what_was_never_synced_and_keeps_what_was(tmp_path, pragma, kept):
    path = str(tmp_path / "vfs.sqlite")
    with Store(path):
        pass  # the schema, synced by a normal open
    vfs_calls = _io_calls(tmp_path, _publish, "full")
    acked, _ = _run(path, _publish, "full", vfs_calls - 1, pragma)
    assert len(acked) > 100
    held = _check_consistent(path)
    lost = _lost(acked, held)
    assert (lost == []) if kept else (len(lost) == len(acked)), (len(lost), len(acked))


@pytest.mark.parametrize("case", list(CASES))
def test_at_full_a_power_cut_loses_no_acknowledged_write(tmp_path, case):
    workload = CASES[case]
    calls = _io_calls(tmp_path, workload, "full")
    total_acked = 0
    for cut in range(CUTS_PER_CASE):
        path = str(tmp_path / f"cut{cut}.sqlite")
        cut_at = 1 + (calls * (cut + 1)) // (CUTS_PER_CASE + 1)
        acked, _ = _run(path, workload, "full", cut_at)
        held = _check_consistent(path)
        assert _lost(acked, held) == [], f"cut {cut} at I/O call {cut_at} of {calls}"
        total_acked += len(acked)
    assert total_acked > 0


@pytest.mark.parametrize("case", list(CASES))
def test_at_normal_a_power_cut_leaves_a_consistent_file(tmp_path, case):
    workload = CASES[case]
    durability = "normal"
    calls = _io_calls(tmp_path, workload, durability)
    for cut in range(CUTS_PER_CASE):
        path = str(tmp_path / f"cut{cut}.sqlite")
        cut_at = 1 + (calls * (cut + 1)) // (CUTS_PER_CASE + 1)
        _run(path, workload, durability, cut_at)
        _check_consistent(path)
