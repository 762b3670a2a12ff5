"""Driving Litestream: replica URLs, the config, and the AWS_CA_BUNDLE problem."""

from __future__ import annotations

import logging

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
