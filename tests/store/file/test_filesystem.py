"""A store refuses a file system that cannot keep SQLite's locks, before writing anything.

The real case: ``nolockfs`` (``tests/store/file/nolockfs``, a FUSE loopback whose
POSIX locks are all granted and never reported), built with Go and mounted
for the test, as network and object-store mounts behave. The type rules are
checked on parsed mount entries.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import signal
import subprocess

import pytest

from spark_queue.errors import StoreError, UnsafeFileSystemError
from spark_queue.store import Store
from spark_queue.store.file import filesystem
from spark_queue.store.file.filesystem import Mount

NOLOCKFS = pathlib.Path(__file__).resolve().parent / "nolockfs"


def digest(path) -> str:
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def nolockfs_binary(tmp_path_factory):
    if shutil.which("go") is None or not os.path.exists("/dev/fuse") or os.geteuid() != 0:
        pytest.skip("needs Go, /dev/fuse and root to mount a FUSE file system")
    binary = tmp_path_factory.mktemp("nolockfs") / "nolockfs"
    subprocess.run(["go", "build", "-o", str(binary), "."], cwd=NOLOCKFS, check=True,
                   timeout=600)
    return binary


@pytest.fixture
def no_lock_mount(nolockfs_binary, tmp_path):
    source, mount_point = tmp_path / "source", tmp_path / "mnt"
    source.mkdir()
    mount_point.mkdir()
    server = subprocess.Popen([str(nolockfs_binary), str(source), str(mount_point)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "mounted"
        yield source, mount_point
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            subprocess.run(["umount", "-l", str(mount_point)], check=False)
            server.kill()


@pytest.mark.slow
def test_a_file_system_that_grants_conflicting_locks_is_refused_and_nothing_is_created(
    no_lock_mount,
):
    _, mount_point = no_lock_mount
    path = mount_point / "app.sqlite"
    with pytest.raises(UnsafeFileSystemError) as refused:
        Store(str(path))
    message = str(refused.value)
    assert str(path) in message and "fuse.nolockfs" in message
    assert "two conflicting locks" in message and "local disk" in message
    assert sorted(os.listdir(mount_point)) == []


@pytest.mark.slow
def test_an_existing_store_on_such_a_file_system_stays_byte_identical(no_lock_mount, tmp_path):
    source, mount_point = no_lock_mount
    made = tmp_path / "made.sqlite"
    with Store(str(made)) as store:
        store.publish_many("t", [{"n": n} for n in range(10)])
    shutil.copyfile(made, source / "app.sqlite")
    before = digest(source / "app.sqlite")
    for readonly in (False, True):
        with pytest.raises(UnsafeFileSystemError, match="conflicting locks"):
            Store(str(mount_point / "app.sqlite"), readonly=readonly)
    assert digest(source / "app.sqlite") == before
    assert sorted(os.listdir(source)) == ["app.sqlite"]


@pytest.mark.parametrize("mount", [
    Mount("/mnt/share", "nfs4", "server:/export"),
    Mount("/mnt/smb", "cifs", "//server/share"),
    Mount("/mnt/bucket", "fuse.s3fs", "s3fs"),
    Mount("/dbfs", "fuse", "dbfs"),
    Mount("/Volumes", "fuse", "uc-volumes"),
])
def test_network_and_cloud_fuse_mounts_are_refused_naming_the_type_and_what_to_do(
    mount, tmp_path, monkeypatch
):
    existing = tmp_path / "existing.sqlite"
    with Store(str(existing)) as store:
        store.publish("t", {"n": 1})
    before = digest(existing)
    monkeypatch.setattr(filesystem, "_checked", {})
    monkeypatch.setattr(filesystem, "mount_of", lambda directory, device: mount)
    for path in (existing, tmp_path / "new.sqlite"):
        with pytest.raises(UnsafeFileSystemError) as refused:
            Store(str(path))
        message = str(refused.value)
        assert str(path) in message and mount.fs_type in message and mount.mount_point in message
        assert "sqliteq backup" in message and "/local_disk0" in message
    assert isinstance(refused.value, StoreError)
    assert digest(existing) == before
    assert not (tmp_path / "new.sqlite").exists()


@pytest.mark.parametrize("mount", [
    Mount("/", "ext4", "/dev/vda"),
    Mount("/tmp", "tmpfs", "tmpfs"),
    Mount("/local_disk0", "xfs", "/dev/nvme0n1"),
    Mount("/home", "fuse.fuse-overlayfs", "fuse-overlayfs"),  # rootless containers: local
])
def test_local_file_systems_pass_the_type_check(mount):
    assert filesystem.unsafe_type(mount) == ""


def test_mountinfo_lines_parse_with_optional_fields_and_escaped_spaces():
    line = ("36 35 98:0 /mnt1 /mnt/my\\040share rw,noatime master:1 shared:7 - nfs4 "
            "server:/exp rw,vers=4.2\n")
    expected = ("98:0", Mount("/mnt/my share", "nfs4", "server:/exp", 36))
    assert filesystem.parse_mount_line(line) == expected
    assert filesystem.parse_mount_line("garbage\n") is None


def test_this_machine_s_temp_directory_keeps_locks(tmp_path):
    assert filesystem.locks_are_ignored(str(tmp_path)) is False
    assert os.listdir(tmp_path) == []  # the scratch file is gone


def test_the_check_runs_once_per_mount(tmp_path, monkeypatch):
    monkeypatch.setattr(filesystem, "_checked", {})
    probes = []
    monkeypatch.setattr(filesystem, "locks_are_ignored", lambda d: probes.append(d) or False)
    for n in range(3):
        Store(str(tmp_path / f"s{n}.sqlite")).close()
    assert len(probes) == 1, probes


def test_a_new_mount_on_a_reused_device_number_is_probed_again(tmp_path, monkeypatch):
    monkeypatch.setattr(filesystem, "_checked", {})
    probes = []
    monkeypatch.setattr(filesystem, "locks_are_ignored", lambda d: probes.append(d) or False)
    mounts = iter([Mount("/m", "tmpfs", "tmpfs", 40), Mount("/m", "fuse.x", "x", 41)])
    monkeypatch.setattr(filesystem, "mount_of", lambda directory, device: next(mounts))
    for n in range(2):
        Store(str(tmp_path / f"s{n}.sqlite")).close()
    assert len(probes) == 2
