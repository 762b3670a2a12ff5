"""Replicate and restore with the real Litestream binary, to a directory and to S3 (moto)."""

from __future__ import annotations

import threading
import time

import pytest

from spark_queue.errors import ReplicationError
from spark_queue.replication import replicate, restore
from spark_queue.store import Producer, Store, check_file, replica_status

pytestmark = pytest.mark.slow


def _replicating(store: str, url: str, **kwargs):
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            replicate(store, url, stop=stop, **kwargs)
        except BaseException as exc:  # surfaced by the test
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return stop, thread, errors


def _roundtrip(tmp_path, url: str) -> None:
    store = str(tmp_path / "local" / "s.sqlite")
    assert restore(store, url, if_missing=True) is False  # an empty replica: a first start
    stop, thread, errors = _replicating(store, url, sync_interval_ms=200)
    try:
        with Store(store, durability="replicated") as s:
            acked = [s.publish("t", i) for i in range(5)]
        with Producer(store, durability="replicated") as producer:
            futures = [producer.publish_nowait("t", i) for i in range(5, 105)]
            acked += [f.result(timeout=60) for f in futures]
        with Store(store) as s:
            assert s.topic("t").bounds()[1] >= 105  # a replicated write is readable once it returns
    finally:
        stop.set()
        thread.join(60)
    assert not errors and acked == list(range(105))
    copy = str(tmp_path / "copy.sqlite")
    assert restore(copy, url) is True
    with Store(copy) as s:
        assert [e.value for e in s.read("t", 0)] == list(range(105))
        assert s.topic("t").bounds() == (0, 105)
    assert check_file(copy).ok
    status = replica_status(copy)
    assert status is not None and status.url == url
    with pytest.raises(ReplicationError, match="never overwrites"):
        restore(copy, url)
    assert restore(copy, url, if_missing=True) is False


def test_a_file_replica_restores_every_acknowledged_write(tmp_path):
    _roundtrip(tmp_path, f"file://{tmp_path}/replica")


def test_an_s3_replica_restores_every_acknowledged_write(tmp_path, s3_env, monkeypatch):
    monkeypatch.setenv("AWS_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")  # as this machine
    _roundtrip(tmp_path, f"s3://replicas/{tmp_path.name}")


def test_restore_at_a_timestamp_yields_the_state_then(tmp_path):
    store = str(tmp_path / "s.sqlite")
    url = f"file://{tmp_path}/replica"
    stop, thread, errors = _replicating(store, url, sync_interval_ms=100)
    try:
        with Store(store, durability="replicated") as s:
            s.publish_many("t", list(range(10)))
            time.sleep(1.1)  # Litestream's timestamps are whole seconds: T must fall between
            middle_ms = time.time_ns() // 1_000_000
            time.sleep(1.1)
            s.publish_many("t", list(range(10, 20)))
    finally:
        stop.set()
        thread.join(60)
    assert not errors
    old = str(tmp_path / "old.sqlite")
    restore(old, url, timestamp_ms=middle_ms)
    with Store(old) as s:
        assert s.topic("t").bounds() == (0, 10)
