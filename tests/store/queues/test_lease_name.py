"""A lease's length has one name, the queue setting's ``visibility_timeout_ms``; ``lease_ms``,
its name in claim, ack_and_claim, extend and Worker before, still works and warns."""

from __future__ import annotations

import pytest

from spark_queue.store import Store
from spark_queue.worker import Worker


def test_lease_ms_still_leases_for_that_long_and_warns_naming_the_new_name(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        q = store.queue("q")
        q.enqueue_many(range(3))
        with pytest.warns(DeprecationWarning, match="use visibility_timeout_ms="):
            [old] = q.claim(1, lease_ms=60_000)
        [new] = q.claim(1, visibility_timeout_ms=60_000)
        assert new.lease_expires_ms - old.lease_expires_ms < 60_000
        with pytest.warns(DeprecationWarning, match=r"extend\(lease_ms=\.\.\.\)"):
            assert q.extend([old], lease_ms=1_000).done == [old.id]
        with pytest.warns(DeprecationWarning, match=r"ack_and_claim\(lease_ms=\.\.\.\)"):
            _, [third] = q.ack_and_claim([old, new], 1, lease_ms=5_000)
        with pytest.raises(TypeError, match="both"):
            q.extend([third], visibility_timeout_ms=1, lease_ms=1)


def test_the_worker_takes_lease_ms_as_the_deprecated_name(tmp_path):
    with pytest.warns(DeprecationWarning, match="use visibility_timeout_ms="):
        worker = Worker(tmp_path / "s.sqlite", "q", print, lease_ms=500)
    assert worker.visibility_timeout_ms == 500
