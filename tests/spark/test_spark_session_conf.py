"""conf/spark-defaults.conf as the local session reads it: Spark's `key value` lines."""

from __future__ import annotations

import pytest

from spark_queue.errors import OptionError
from spark_queue.spark.session import conf_dir, read_spark_defaults


def test_the_shipped_settings_parse(tmp_path):
    settings = read_spark_defaults(conf_dir() / "spark-defaults.conf")
    assert settings and all(key.startswith("spark.") for key in settings)


def test_comments_and_blank_lines_are_skipped_and_values_keep_inner_spaces(tmp_path):
    path = tmp_path / "spark-defaults.conf"
    path.write_text("# a comment\n\nspark.a  1\nspark.b -Da=1 -Db=2\n", encoding="utf-8")
    assert read_spark_defaults(path) == {"spark.a": "1", "spark.b": "-Da=1 -Db=2"}


def test_a_key_without_a_value_names_the_file_and_line(tmp_path):
    path = tmp_path / "spark-defaults.conf"
    path.write_text("spark.a 1\nspark.sql.shuffle.partitions\n", encoding="utf-8")
    with pytest.raises(OptionError, match=r"spark-defaults.conf:2: .*'spark.sql.shuffle"):
        read_spark_defaults(path)
