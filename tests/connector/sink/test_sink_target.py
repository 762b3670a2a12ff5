"""The sink's path must name a store unless createStore is set: a typo'd path fails when Spark
asks for the writer (on the driver, before any task), naming the option, and nothing is
created; the path may be a file: URI, and other schemes are refused naming the path."""

from __future__ import annotations

import os

import pytest
from pyspark.sql.types import StringType, StructField, StructType

from spark_queue.connector import SqliteQueueDataSource
from spark_queue.errors import NotAStoreError, OptionError, StoreNotFoundError
from spark_queue.store import Store

SCHEMA = StructType([StructField("value", StringType())])
REFUSAL = r"^sqliteq sink: 'path' names .*, .*not a store.*set option createStore=true.*" \
          r"nothing was created\.$"


def writers(options: dict):
    source = SqliteQueueDataSource({"topic": "t", **options})
    return {
        "df.write": lambda: source.writer(SCHEMA, False),
        "writeStream": lambda: source.streamWriter(SCHEMA, False),
    }


@pytest.fixture(params=["df.write", "writeStream"])
def side(request):
    return request.param


def test_a_path_that_is_not_a_store_fails_at_start_naming_create_store(side, tmp_path):
    missing, empty = tmp_path / "typo.sqlite", tmp_path / "empty.sqlite"
    empty.touch()
    for path in (missing, empty):
        with pytest.raises(StoreNotFoundError, match=REFUSAL):
            writers({"path": str(path)})[side]()
    assert sorted(os.listdir(tmp_path)) == ["empty.sqlite"]
    assert empty.stat().st_size == 0


def test_create_store_true_lets_the_first_commit_create_it(side, tmp_path):
    path = tmp_path / "new.sqlite"
    writer = writers({"path": str(path), "createStore": "true"})[side]()
    assert writer.options.create_store and not path.exists()  # created by the commit only
    with pytest.raises(StoreNotFoundError, match="directory .* does not exist"):
        writers({"path": str(tmp_path / "no" / "dir.sqlite"), "createStore": "true"})[side]()
    assert not (tmp_path / "no").exists()


def test_a_store_is_written_without_create_store_and_a_foreign_file_is_refused(side, tmp_path):
    Store(tmp_path / "app.sqlite").close()
    writers({"path": str(tmp_path / "app.sqlite")})[side]()
    (tmp_path / "notes.txt").write_text("not a database")
    with pytest.raises(NotAStoreError):
        writers({"path": str(tmp_path / "notes.txt"), "createStore": "true"})[side]()


@pytest.mark.parametrize("form", ["file:{p}", "file://{p}", "file://localhost{p}"])
def test_a_file_uri_names_the_local_store(side, tmp_path, form):
    path = str(tmp_path / "app.sqlite")
    Store(path).close()
    assert writers({"path": form.format(p=path)})[side]().options.path == path


@pytest.mark.parametrize("path", ["dbfs:/tmp/app.sqlite", "s3://bucket/app.sqlite",
                                  "file:app.sqlite", "file://host/app.sqlite"])
def test_a_uri_of_other_storage_or_without_an_absolute_path_is_refused(side, path):
    with pytest.raises(OptionError, match=r"option 'path' names .*(local path|absolute path)"):
        writers({"path": path})[side]()
