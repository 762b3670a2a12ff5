"""The docs' option tables and the DataSource docstring say what the option tables say, on
both sides.

The first table of docs/reading.md (source) and of docs/writing.md (sink) is the
rendering of its option table (name, doc default, doc line; a Kafka alias gets a
row of its own right after its option), so a changed option, default or doc line
fails here until the docs follow.
"""

from __future__ import annotations

import re

import pytest

from spark_queue.connector import SqliteQueueDataSource
from spark_queue.connector.option_table import OptionTable
from spark_queue.connector.sink.sink_options import SINK_TABLE
from spark_queue.connector.source.source_options import SOURCE_TABLE
from tests.docs_pages import text

SIDES = {
    "source": ("docs/reading.md", SOURCE_TABLE),
    "sink": ("docs/writing.md", SINK_TABLE),
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


def doc_rows(page: str) -> list[str]:
    """The rows of the page's first table (the option table)."""
    rows: list[str] = []
    for line in text(page).splitlines():
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    return rows


@pytest.mark.parametrize("side", sorted(SIDES))
def test_the_docs_option_table_is_the_rendered_option_table(side):
    page, table = SIDES[side]
    assert doc_rows(page) == rendered(table)


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
    kafka = text("docs/kafka.md")
    for name in ("kafka.*", "kafkaConsumer.*", "fetchOffset.*", "groupIdPrefix", "includeHeaders"):
        assert f"`{name}`" in kafka, name
