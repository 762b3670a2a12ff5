"""A topic's schema in Spark DDL: the subset parses to one canonical text; mistakes name
their position."""

from __future__ import annotations

import pytest

from spark_queue.errors import SchemaDdlError
from spark_queue.store.streams.schema_ddl import parse_schema


def test_the_subset_parses_to_canonical_ddl_with_aliases_resolved():
    schema = parse_schema(
        "device string NOT NULL, temp DOUBLE COMMENT 'celsius', n integer, big LONG, "
        "s SHORT, b BYTE, f REAL, d DEC(5, 2), d0 DECIMAL, day DATE, ts TIMESTAMP, ok BOOLEAN, "
        "site STRUCT<id: INT NOT NULL, zone STRING>, tags ARRAY<STRING>, m MAP<STRING, INT>, "
        "`quoted` INT")
    assert schema.ddl() == (
        "device STRING NOT NULL, temp DOUBLE COMMENT 'celsius', n INT, big BIGINT, "
        "s SMALLINT, b TINYINT, f FLOAT, d DECIMAL(5,2), d0 DECIMAL(10,0), day DATE, "
        "ts TIMESTAMP, ok BOOLEAN, site STRUCT<id: INT NOT NULL, zone: STRING>, "
        "tags ARRAY<STRING>, m MAP<STRING, INT>, quoted INT")
    assert parse_schema(schema.ddl()) == schema


def test_an_outer_struct_is_the_same_schema():
    assert parse_schema("STRUCT<a: INT, b: STRING>") == parse_schema("a INT, b STRING")


def test_a_comment_with_a_quote_round_trips():
    schema = parse_schema(r"a INT COMMENT 'it\'s'")
    assert schema.fields[0].comment == "it's"
    assert parse_schema(schema.ddl()) == schema


@pytest.mark.parametrize(("ddl", "message"), [
    ("a INT,", "expected a field name, got 'the end' at position 6"),
    ("a FOO", "unknown type 'FOO' at position 2"),
    ("a INT b", "expected ',' or 'the end' after field 'a', got 'b' at position 6"),
    ("a BINARY", "type BINARY is not supported in a topic's schema at position 2"),
    ("a MAP<INT, STRING>", "a MAP's keys must be STRING"),
    ("a STRUCT<b INT", "expected ',' or '>' after field 'b', got 'the end' at position 14"),
    ("a INT, A STRING", "field 'A' is declared twice"),
    ("a DECIMAL(50,2)", "DECIMAL(50,2) needs 1 <= precision <= 38"),
    ("a INT NOT", "expected NULL after NOT at position 9"),
    ("a int $", "unexpected character '$' at position 6"),
    ("`a b` INT", "field name 'a b' must be letters, digits and _"),
    ("", "must be a non-empty string"),
])
def test_a_mistake_names_its_position(ddl, message):
    with pytest.raises(SchemaDdlError, match="topic schema DDL") as caught:
        parse_schema(ddl)
    assert message in str(caught.value)
