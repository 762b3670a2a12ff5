"""A local S3 server (moto's, from moto[server]) for the replication tests: started on
127.0.0.1 on a free port, with one bucket, and stopped whatever happens."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

MOTO = os.path.join(os.path.dirname(sys.executable), "moto_server")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def moto_server():
    """The endpoint URL of a moto S3 server holding the bucket ``replicas``."""
    port = _free_port()
    server = subprocess.Popen([MOTO, "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto_server did not start") from None
                time.sleep(0.1)
        request = urllib.request.Request(f"{endpoint}/replicas", method="PUT")
        urllib.request.urlopen(request, timeout=10).close()
        yield endpoint
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture
def s3_env(moto_server, monkeypatch):
    """The AWS variables Litestream reads, pointing at the moto server."""
    for name, value in {"AWS_ENDPOINT_URL_S3": moto_server, "AWS_ACCESS_KEY_ID": "test",
                        "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    return moto_server
