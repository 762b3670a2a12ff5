"""One lease primitive: ``store/file/lease.py`` is the package's one implementation of a
process's hold on a job of the store (housekeeping's run, a Kafka copy's exporter, the
replicator), and its staleness rule is the only one.

The count is taken from the source, as test_commit_door takes the commit sites:

- a timed lease's row fields (``until_ms``, ``renewed_ms`` as string constants: reading or
  writing a lease row) appear in ``lease.py`` only, so a second module that keeps a lease
  in ``sq_meta`` with a rule of its own fails here (before round 6, housekeeping and the
  mirror each had one, and their staleness rules differed);
- kernel locks (``flock``, ``lockf``, ``fcntl`` lock commands) are taken in ``lease.py``
  only. The replicator's lock stays a kernel lock, not a timed lease: it is shared with
  its Litestream child, which goes on shipping after a SIGKILLed replicator, and the
  kernel drops it exactly when both have ended, where an expiry could only guess (and its
  renewals would cost an idle replicated store an object-store request each);
- every timed lease is a ``LeaseKind`` declared in the module that uses it.

A job's lease in a queue (``sq_jobs.lease_expires_at``) and a worker's registration
(``sq_workers.expires_ms``) are rows of the queue wing's own tables, the product's
at-least-once delivery, claimed in SQL by many workers at once: not this kind of lease.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

from spark_queue import defaults
from spark_queue.store.file import lease
from spark_queue.store.file.connection import now_ms
from tests.store.file.test_commit_door import _call_of, _sites

LEASE = "store/file/lease.py"
#: The modules that declare a timed lease's kind, one kind each.
KINDS = {"store/floor/housekeeping.py", "store/streams/mirror_lease.py"}
#: ``filesystem.locks_are_ignored`` asks whether a directory's file system honours locks
#: (two open files of a scratch file): a probe, holding nothing past its own call.
_LOCK_PROBES = {("store/file/filesystem.py", "locks_are_ignored", "F_OFD_SETLK")}


def _lease_field(node):
    if isinstance(node, ast.Constant) and node.value in ("until_ms", "renewed_ms"):
        return node.value
    return None


def _kernel_lock(node):
    if isinstance(node, ast.Attribute) and node.attr in (
            "flock", "lockf", "F_SETLK", "F_SETLKW", "F_OFD_SETLK", "F_OFD_SETLKW"):
        return node.attr
    return None


def test_the_package_has_one_lease_implementation():
    rows = {site for site in _sites(_lease_field) if site[0] != LEASE}
    assert not rows, ("a lease row read or written outside store/file/lease.py: take, renew "
                      f"and release through it (one staleness rule): {sorted(rows)}")
    locks = {site for site in _sites(_kernel_lock) if site[0] != LEASE} - _LOCK_PROBES
    assert not locks, f"a kernel lock outside store/file/lease.py: {sorted(locks)}"
    kinds = {site[0] for site in _sites(_call_of("LeaseKind"))}
    assert kinds == KINDS, "a new timed lease: name it in KINDS, with its reason to be one"
    # The implementation is still where the count looks for it.
    assert {site[0] for site in _sites(_lease_field)} == {LEASE}
    assert {site[0] for site in _sites(_kernel_lock)} - {p[0] for p in _LOCK_PROBES} == {LEASE}


KIND = lease.LeaseKind(60_000)


def _other(**row):
    now = now_ms()
    fields = {"holder": "other", "until_ms": now + 30_000, "renewed_ms": now}
    fields.update(row)
    return json.dumps(fields)


def _put(store, value):
    with store.write() as conn:
        conn.execute("INSERT OR REPLACE INTO sq_meta VALUES ('a_lease', ?)", (value,))


def test_a_lease_holds_until_it_runs_out_and_then_goes_to_the_next(store):
    me = lease.new_claim(KIND, name="me")
    _put(store, _other())
    with store.write() as conn:
        assert lease.acquire(conn, KIND, "a_lease", me).name == "other"
    _put(store, _other(until_ms=now_ms() - 1))
    with store.write() as conn:
        taken = lease.acquire(conn, KIND, "a_lease", me)
    assert taken.name == "me" and taken.renewals == 0
    with store.write() as conn:
        again = lease.acquire(conn, KIND, "a_lease", me)
    assert (again.since_ms, again.renewals) == (taken.since_ms, 1)
    with store.write() as conn:
        lease.give_back(conn, KIND, "a_lease", me)
        assert lease.holder_of(conn, KIND, "a_lease") is None


def test_a_lease_written_by_a_clock_since_set_back_is_stale(store):
    ahead = now_ms() + defaults.CLOCK_SKEW_MS + 60_000
    me = lease.new_claim(KIND, name="me")
    for row in ({"renewed_ms": ahead, "until_ms": ahead + 60_000},
                {"until_ms": ahead + 60_000, "renewed_ms": None},  # a row of before renewals
                {"until_ms": ahead + 60_000, "renewed_ms": None, "lease_ms": 60_000}):
        _put(store, _other(**row))
        with store.write() as conn:
            assert lease.acquire(conn, KIND, "a_lease", me).name == "me", row
    # A renewal a little ahead (within the bound) still holds.
    _put(store, _other(renewed_ms=now_ms() + 1_000))
    with store.write() as conn:
        assert lease.acquire(conn, KIND, "a_lease", me).name == "other"


def test_a_holder_whose_process_ended_is_gone_at_once_when_its_row_says_which(store):
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    pid = int(child.stdout)
    recorded = lease.process_of(os.getpid()).split("/")[0] + "/1"
    dead = lease.new_claim(KIND, name="dead")._replace(pid=pid, process=recorded)
    assert dead.gone() and not dead.live(now_ms())
    assert not dead._replace(process="").gone()  # no process recorded: waited out
    assert not lease.new_claim(KIND).gone()


def test_renewing_is_a_fence_and_taking_is_not(store):
    me = lease.new_claim(KIND, name="me")
    with store.write() as conn:
        lease.acquire(conn, KIND, "a_lease", me)
    _put(store, _other(until_ms=1))  # taken over, and run out since
    with store.write() as conn:
        assert lease.renew(conn, KIND, "a_lease", me).name == "other"
        assert lease.acquire(conn, KIND, "a_lease", me).name == "me"
        conn.execute("DELETE FROM sq_meta WHERE key = 'a_lease'")
        assert lease.renew(conn, KIND, "a_lease", me).name == "me"  # gone: taken back


def test_each_kinds_rows_of_earlier_releases_still_read(store):
    mirror = lease.LeaseKind(30_000, holder_field="token")
    _put(store, json.dumps({"token": "x", "host": "h", "pid": 1, "since_ms": 1,
                            "until_ms": 2, "lease_ms": 30_000, "renewals": 3}))
    with store.file.read() as conn:
        assert lease.holder_of(conn, mirror, "a_lease") == lease.Holder(
            "x", "h", 1, 1, 2, 30_000, None, 3, "")
    _put(store, json.dumps({"holder": "y", "until_ms": 5}))
    with store.file.read() as conn:
        assert lease.holder_of(conn, KIND, "a_lease") == lease.Holder("y", "", 0, 5, 5, 60_000)
    _put(store, '"not a lease"')
    with store.file.read() as conn:
        assert lease.holder_of(conn, KIND, "a_lease") is None
