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


FAKE_LITESTREAM = '''#!{python}
"""A stand-in for litestream: `version` prints {version!r}; `replicate` opens its control
socket's path and waits for SIGTERM; `sync` fails {busy} times with SQLite's busy error
(counted in {state!r}), then answers that the replica holds everything."""
import json, os, pathlib, signal, sys, time
command = sys.argv[1]
if command == "version":
    print({version!r})
elif command == "replicate":
    config = pathlib.Path(sys.argv[sys.argv.index("-config") + 1]).read_text()
    socket_path = json.loads(config.split("path: ", 1)[1].splitlines()[0])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    pathlib.Path(socket_path).touch()
    while True:
        time.sleep(1)
elif command == "sync":
    state = pathlib.Path({state!r})
    failed = int(state.read_text()) if state.exists() else 0
    if failed < {busy}:
        state.write_text(str(failed + 1))
        print("sync: create _litestream_seq table: database is locked (SQLITE_BUSY)",
              file=sys.stderr)
        sys.exit(1)
    print(json.dumps({{"txid": 1, "replica_txid": 1}}))
elif command == "restore":
    # Copies FAKE_RESTORE_FROM to -o as Litestream writes (open, write, with this
    # process's umask), noting each mode it made in FAKE_RESTORE_SEEN; with
    # FAKE_RESTORE_HANG, stops half-way and waits to be killed.
    out = pathlib.Path(sys.argv[sys.argv.index("-o") + 1])
    data = pathlib.Path(os.environ["FAKE_RESTORE_FROM"]).read_bytes()
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as file:
        file.write(data[: len(data) // 2])
        file.flush()
        seen = {{"tmp": os.stat(tmp).st_mode & 0o777,
                 "dir": os.stat(out.parent).st_mode & 0o777}}
        pathlib.Path(os.environ["FAKE_RESTORE_SEEN"]).write_text(json.dumps(seen))
        while os.environ.get("FAKE_RESTORE_HANG"):
            time.sleep(1)
        file.write(data[len(data) // 2:])
    os.rename(tmp, out)
else:
    sys.exit("fake litestream: no command " + command)
'''


@pytest.fixture
def fake_litestream(tmp_path):
    """Make a fake litestream (FAKE_LITESTREAM) in a folder of its own; returns its path."""
    def make(version: str = "0.5.17", busy: int = 0) -> str:
        folder = tmp_path / "fake-bin"
        folder.mkdir(exist_ok=True)
        exe = folder / "litestream"
        exe.write_text(FAKE_LITESTREAM.format(python=sys.executable, version=version, busy=busy,
                                              state=str(folder / "busy-count")))
        exe.chmod(0o755)
        return str(exe)
    return make
