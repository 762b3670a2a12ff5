"""The README table, the DataSource docstring and the parser list the same source options."""

from __future__ import annotations

import pathlib
import re

from spark_queue.connector import SqliteQueueDataSource
from spark_queue.connector.source_options import OPTION_NAMES, SOURCE_OPTIONS

ROOT = pathlib.Path(__file__).resolve().parents[2]


def readme_table() -> dict[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Reading with Spark"):]
    section = section[: section.index("\n## ", 1)]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"\| `([A-Za-z]+)` \|\s*([^|]*?)\s*\|", line)
        if match:
            rows[match.group(1)] = match.group(2).strip()
    return rows


def docstring_options() -> set[str]:
    doc = SqliteQueueDataSource.__doc__
    reading = doc[doc.index("Reading\n"): doc.index("Writing\n")]
    options_part = reading.split("Options (", 1)[1].split("\n\n    Default schema")[0]
    bullets = re.split(r"\n\s*- ", options_part)
    names = set()
    for bullet in bullets[1:]:
        flat = " ".join(bullet.split())
        head = re.split(r":\s", flat, maxsplit=1)[0]
        names.update(re.findall(r"(?<!default )``([A-Za-z]+)``", head))
    return names


def test_readme_table_lists_exactly_the_parsed_options_with_their_defaults():
    table = readme_table()
    assert list(table) == list(OPTION_NAMES)
    for spec in SOURCE_OPTIONS:
        if spec.default:
            assert table[spec.name] == f"`{spec.default}`", spec.name


def test_datasource_docstring_documents_exactly_the_parsed_options():
    assert docstring_options() == set(OPTION_NAMES)
