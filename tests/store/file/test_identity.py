"""A store's identity (schema version 7): written once, new for every store created, kept
by a migration and by every copy, read back as it was written."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from spark_queue.cli import main
from spark_queue.errors import CorruptStoreError
from spark_queue.store import Store, backup_file, store_id

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "stores"


def identity(path: str) -> str:
    with Store(path) as store:
        return store_id(store)


def test_every_new_store_gets_its_own_identity_and_keeps_it(tmp_path):
    first = identity(str(tmp_path / "a.sqlite"))
    assert re.fullmatch(r"[0-9a-f]{32}", first)
    assert identity(str(tmp_path / "a.sqlite")) == first
    assert identity(str(tmp_path / "b.sqlite")) != first


def test_a_re_created_store_at_the_same_path_gets_a_new_identity(tmp_path):
    path = str(tmp_path / "app.sqlite")
    before = identity(path)
    for name in os.listdir(tmp_path):
        os.remove(tmp_path / name)
    assert identity(path) != before


def test_an_older_store_migrated_forward_gets_an_identity(tmp_path):
    path = str(tmp_path / "old.sqlite")
    shutil.copyfile(FIXTURES / "v6.sqlite", path)
    migrated = identity(path)
    assert re.fullmatch(r"[0-9a-f]{32}", migrated)
    assert identity(path) == migrated


@pytest.mark.parametrize("copy", ["backup_file", "sqliteq backup", "cp"])
def test_a_copy_of_a_store_keeps_its_identity(copy, tmp_path):
    path, dest = str(tmp_path / "app.sqlite"), str(tmp_path / "copy.sqlite")
    original = identity(path)
    if copy == "backup_file":
        backup_file(path, dest)
    elif copy == "sqliteq backup":
        assert main(["backup", path, dest]) == 0
    else:
        shutil.copyfile(path, dest)  # closed: the WAL is checkpointed into the file
    assert identity(dest) == original


def test_a_store_whose_identity_was_deleted_is_named_with_the_fix(store):
    with store.write() as conn:
        conn.execute("DELETE FROM sq_meta WHERE key = 'store_id'")
    with pytest.raises(CorruptStoreError, match=r"no identity.*INSERT OR REPLACE INTO sq_meta"):
        store_id(store)
