"""The README tables and the DataSource docstring say what the option tables say, on both sides.

Each README table is the rendering of its option table (name, README
default, doc line; a Kafka alias gets a row of its own right after its
option), so a changed option, default or doc line fails here until the
README follows.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from spark_queue.connector import SqliteQueueDataSource
from spark_queue.connector.option_table import OptionTable
from spark_queue.connector.sink.options import SINK_TABLE
from spark_queue.connector.source.options import SOURCE_TABLE

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SIDES = {
    "source": ("## Reading with Spark", SOURCE_TABLE),
    "sink": ("## Writing with Spark", SINK_TABLE),
}


def rendered(table: OptionTable) -> list[str]:
    rows = ["| option | default | meaning |", "|---|---|---|"]
    for option in table.options:
        default = option.doc_default
        if default and " " not in default and not default.startswith("("):
            default = f"`{default}`"
        rows.append(f"| `{option.name}` | {default} | {option.doc} |".replace("|  |", "| |"))
        rows.extend(
            f"| `{alias}` | | Kafka's name for `{option.name}` |" for alias in option.aliases
        )
    return rows


def readme_rows(heading: str) -> list[str]:
    """The rows of the first table under ``heading`` (the option table)."""
    section = README[README.index(heading):]
    section = section[: section.index("\n## ", 1)]
    rows: list[str] = []
    for line in section.splitlines():
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    return rows


@pytest.mark.parametrize("side", sorted(SIDES))
def test_readme_option_table_is_the_rendered_option_table(side):
    heading, table = SIDES[side]
    assert readme_rows(heading) == rendered(table)


def docstring_part(side: str) -> str:
    doc = SqliteQueueDataSource.__doc__
    if side == "source":
        part = doc[doc.index("Reading\n"): doc.index("Writing\n")]
        return part.split("Options (", 1)[1].split("\n\n    Default schema")[0]
    part = doc[doc.index("Writing\n"):]
    return part.split("Options (", 1)[1].split("\n\n    Columns:")[0]


def docstring_options(side: str) -> set[str]:
    """Every option name in the head (before ': ') of a bullet of the side's Options list."""
    names = set()
    for bullet in re.split(r"\n\s*- ", docstring_part(side))[1:]:
        head = re.split(r":\s", " ".join(bullet.split()), maxsplit=1)[0]
        names.update(re.findall(r"(?<!default )``([A-Za-z]+)``", head))
    return names


@pytest.mark.parametrize("side", sorted(SIDES))
def test_datasource_docstring_documents_exactly_the_parsed_options_and_aliases(side):
    assert docstring_options(side) == set(SIDES[side][1].names())


def test_the_ignored_kafka_client_options_are_documented_on_both_sides():
    for side in SIDES:
        assert "``kafka.*``" in docstring_part(side)
    kafka = README[README.index("## Swapping Kafka for sqliteq"):]
    for name in ("kafka.*", "kafkaConsumer.*", "fetchOffset.*", "groupIdPrefix", "includeHeaders"):
        assert f"`{name}`" in kafka, name
