"""A backup never writes its source: a store written by an older release (every schema
version in tests/fixtures/stores) is copied as it is, the source stays byte-identical,
and the copy opens with the release that wrote it."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from spark_queue.cli import main
from spark_queue.store import Store, backup_file
from spark_queue.store.file.schema import latest_version

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "stores"
# The commit that wrote each fixture (tests/fixtures/stores/README.md).
WRITTEN_BY = {
    1: "6a606e92df00dfab0464b027e4c76641261df297",
    2: "c7db9546d8728be6880d21332c58a0427ef8c735",
    3: "62fab2a30e57975cff55b43a2dac70334fe728b5",
    4: "188dc9c95e6ad96c17eec61b32fc44201328fc86",
    5: "85d9262a730d6be2e0b25784d2cab148233b3f8e",
    6: "406650e8a0fa533dc4f7b20b3ea110ba15442870",
    7: "7b36002e9ff62a64a80c03fb5313e6ff8207e0d9",
    8: "cd8173fdc0918b5f8e4ab1131eade45bbea05207",
    9: "4a965080fd4410c80fd1adea78b896fa95292aba",
    10: "455a1b907d3db9aeb1db621ad2c5a8191b76099a",
    11: "10cfc5311758e95833aa841aa58b5d2b03e5e60a",
    12: "aa58b454f51629e08555ed51f9a00c306fd4c34e",
    13: "89862f7bb2baa3a3c1c37feeda524711a78af31b",
    14: "ed2000320038190648181e723d800e82d2def58c",
}
ENTRY_POINTS = {
    "cli": lambda src, dest: main(["backup", src, dest]),
    "backup_file": lambda src, dest: backup_file(src, dest) and 0,
}


def digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def user_version(path: str) -> int:
    """PRAGMA user_version, read from the file header (bytes 60-63): opening a WAL file,
    even read-only, would leave -shm and -wal files beside the committed fixture."""
    return int.from_bytes(Path(path).read_bytes()[60:64], "big")


def test_there_is_a_fixture_for_every_earlier_schema_version():
    assert set(WRITTEN_BY) >= set(range(1, latest_version()))
    for version in WRITTEN_BY:
        assert user_version(str(FIXTURES / f"v{version}.sqlite")) == version


@pytest.fixture(params=sorted(WRITTEN_BY), ids=lambda v: f"v{v}")
def old_store(request, tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    path = source / "store.sqlite"
    shutil.copyfile(FIXTURES / f"v{request.param}.sqlite", path)
    return request.param, str(path)


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_a_backup_of_an_older_store_leaves_the_source_byte_identical(old_store, entry, tmp_path):
    version, path = old_store
    before = digest(path)
    dest = str(tmp_path / "copy.sqlite")
    assert ENTRY_POINTS[entry](path, dest) == 0
    assert digest(path) == before
    assert sorted(os.listdir(os.path.dirname(path))) == ["store.sqlite"]  # no -wal/-shm left
    assert user_version(dest) == version


def release(version: int, tmp_path: Path) -> Path:
    """The package as the commit that wrote ``version`` had it."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", WRITTEN_BY[version], "spark_queue"],
        check=True, capture_output=True,
    ).stdout
    where = tmp_path / f"release-v{version}"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(where, filter="data")
    return where


OPEN_WITH_OLD_RELEASE = """
import sys
from spark_queue.store import Store
with Store(sys.argv[1]) as store:
    version = store.conn.execute("PRAGMA user_version").fetchall()[0][0]
    events = [e.value for e in store.read("events", 0)]
    print(version, events, store.committed_offsets("reader"))
"""


def test_the_copy_of_an_older_store_opens_with_the_release_that_wrote_it(old_store, tmp_path):
    version, path = old_store
    dest = str(tmp_path / "copy.sqlite")
    assert main(["backup", path, dest]) == 0
    env = {**os.environ, "PYTHONPATH": str(release(version, tmp_path))}
    done = subprocess.run(
        [sys.executable, "-c", OPEN_WITH_OLD_RELEASE, dest],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    with Store(path, readonly=version == latest_version()) as current:
        expected = [e.value for e in current.read("events", 0)]
    assert done.stdout.split(" ", 1) == [
        str(version), f"{expected} {{'events': 3}}\n"
    ]
