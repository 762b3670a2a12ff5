"""One module knows the reserved keys of the source's offsets (``@store``, ``@last``,
``@reader``): ``connector/offset_json.py``, home of :class:`SourceOffset`. Every other module
takes the typed value, so a new key or a new rule about one is written once (issue 62)."""

from __future__ import annotations

import ast
import pathlib

from spark_queue.connector.offset_json import RESERVED_KEYS, SourceOffset

ROOT = pathlib.Path(__file__).resolve().parents[2]
KEY_NAMES = {"STORE_KEY", "LAST_READ_KEY", "READER_KEY", "RESERVED_KEYS"}
# The helpers that handed the raw dict's keys around before the typed value.
OLD_HELPERS = {"split_store", "reader_of", "with_store", "last_read"}


def touches_the_keys(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in RESERVED_KEYS:
            return True
        if isinstance(node, ast.Name) and node.id in KEY_NAMES | OLD_HELPERS:
            return True
        if isinstance(node, ast.Attribute) and node.attr in KEY_NAMES | OLD_HELPERS:
            return True
        if isinstance(node, ast.alias) and node.name in KEY_NAMES | OLD_HELPERS:
            return True
    return False


def test_only_offset_json_reads_the_reserved_offset_keys():
    files = [*sorted((ROOT / "spark_queue").rglob("*.py")),
             *sorted((ROOT / "benchmarks").rglob("*.py"))]
    readers = [str(path.relative_to(ROOT)) for path in files
               if touches_the_keys(ast.parse(path.read_text(encoding="utf-8")))]
    assert readers == ["spark_queue/connector/offset_json.py"]


def test_a_source_offset_goes_back_to_spark_key_for_key_as_it_came():
    """Spark compares offsets by their JSON text: what a checkpoint of any release holds
    comes back unchanged, whatever of the reserved keys it has."""
    forms = [
        {"a": 1, "b": 0},  # before the store's identity
        {"@store": "9f0c", "t": 4},
        {"@store": "9f0c", "@last": {"t": [3, 1764300000000, "9c1d0e2a3b4c5d6e"]}, "t": 4},
        {"@reader": "5c1d", "@store": "9f0c", "t": 4},
        {"@reader": "5c1d", "@store": "9f0c",
         "@last": {"t": [3, 1764300000000, "9c1d0e2a3b4c5d6e"]}, "t": 4, "u": 0},
    ]
    for form in forms:
        offset = SourceOffset.from_spark(form)
        assert list(offset.to_spark().items()) == list(form.items())
        assert SourceOffset.from_spark(offset.to_spark()) == offset
