"""The Python writers' check of a value against a topic's schema rows.

:class:`ValueCheck` is compiled from the ``FieldRow`` rows the ``sq_publish`` trigger
reads too (:mod:`schema_rows` decides which JSON values each type accepts, in a table),
so both checks refuse the same values. Its plans
(:class:`_SurePlan` for one dict, :class:`_ColumnPlan` for many) answer "fits" or "not
sure"; the walk over the rows decides the rest and names what it refused.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any, NamedTuple

from spark_queue.store.streams.schema_rows import FORMATS, FieldRow


class _Absent:
    """The type of :data:`_ABSENT`, so a missing key has a type of its own in accept sets."""


_ABSENT = _Absent()
_JSON_TYPES: dict[type, str] = {str: "text", int: "integer", float: "real", list: "array",
                                dict: "object", type(None): "null"}


def json_type(value: Any) -> str:
    """SQLite's ``json_type`` name of a parsed JSON value."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return _JSON_TYPES[type(value)]


def _keys(path: str) -> tuple[str, ...]:
    return tuple(path.split(".")[1:])


def _at(value: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if type(value) is not dict:
            return _ABSENT
        value = value.get(key, _ABSENT)
        if value is _ABSENT:
            return _ABSENT
    return value


def _got(value: Any) -> str:
    if value is _ABSENT:
        return "nothing (the field is missing)"
    kind = json_type(value)
    if kind in ("integer", "real", "text"):
        return f"{kind} {json.dumps(value, ensure_ascii=False)[:40]}"
    return "null" if kind == "null" else f"a JSON {kind}"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_loads = json.JSONDecoder(parse_constant=_refuse_constant).decode


_PY_TYPES = {"text": str, "integer": int, "real": float, "true": bool, "false": bool,
             "array": list, "object": dict}


class _Compiled(NamedTuple):
    row: FieldRow
    key: str | None  # a top-level field's one key (the fast lookup), else None
    keys: tuple[str, ...]
    parent: tuple[str, ...]
    container: tuple[str, ...] | None
    types: frozenset[str]
    py_types: frozenset[type]  # the Python types of ``types`` (bool apart from int)
    lo: int | float | None
    hi: int | float | None
    matches: Callable[[str], object] | None  # a match (truthy) or None


def _compile(row: FieldRow) -> _Compiled:
    keys = _keys(row.path)
    types = frozenset(row.types.split())
    return _Compiled(row, keys[0] if row.container is None and len(keys) == 1 else None,
                     keys, _keys(row.parent),
                     None if row.container is None else _keys(row.container), types,
                     frozenset(_PY_TYPES[t] for t in types), row.lo, row.hi,
                     _format_matcher(row.format))


def _fits(item: _Compiled, here: Any) -> bool | None:
    """Whether a present value fits ``item`` (the fast test :meth:`ValueCheck._bad` words);
    None for null or missing, where the parent decides."""
    kind = type(here)
    if kind in item.py_types:
        if item.lo is not None and (kind is int or kind is float):
            return bool(item.lo <= here <= item.hi)
        if item.matches is not None and kind is str:
            return item.matches(here) is not None
        return True
    if here is None or here is _ABSENT:
        return None
    return False


# What Python's JSON encoder turns a dict key that is not a str into (an int's digits, True,
# False, None, a float's inf or nan): a field of such a name could meet such a key.
_STRINGIFIED_KEYS = ("true", "false", "null", "Infinity", "NaN")


class ValueCheck:
    """The Python side of the check: :meth:`problem` of one stored value, from ``rows``."""

    def __init__(self, rows: list[FieldRow]) -> None:
        self.rows = rows
        self._compiled = [_compile(row) for row in rows]
        # The walk's per-row constants as plain tuples (attribute reads cost more than the
        # tests): the item, its key or keys, its container, its Python types, range, format.
        self._plan = [(c, c.key, c.keys, c.container, c.py_types, c.lo, c.hi, c.matches,
                       c.row.required) for c in self._compiled]
        self._sure_plan = _SurePlan(self._compiled)
        self._column_plan = _ColumnPlan(self._compiled)
        names = {name for row in rows for path in (row.path, row.container or "$")
                 for name in _keys(path)}
        # Whether :meth:`fits_objects` may check dicts as given (see there).
        self._objects_exact = not any(name.isdigit() or name in _STRINGIFIED_KEYS
                                      for name in names)

    def fits_objects(self, values: Sequence[Any]) -> bool:
        """Whether every value, a Python object a writer is about to encode with the store's
        codec (``json.dumps``), fits: the walk :meth:`problem` makes after parsing, made on
        the object itself, which the stored text parses back into. True only when every
        value is a ``dict`` and each container the walk meets has its exact JSON type
        (a tuple, a dict subclass or a str subclass fails here, and the caller checks the
        stored text instead), and never for a schema with a field a non-str key could be
        encoded as (``1``, ``true``, ``null``...): such a key is the one the text would
        hold. False is not a verdict: the stored text is checked then."""
        if not self._objects_exact:
            return False
        if (len(values) >= COLUMNS_FROM and set(map(type, values)) == {dict}
                and self._column_plan.fits(list(values))):
            return True
        walk = self._walk
        for value in values:
            if type(value) is not dict:
                return False
            try:
                if walk(value) is not None:
                    return False
            except KeyError:  # wording a failure met a Python type of no JSON name (a tuple)
                return False
        return True

    def problem(self, stored: Any) -> str | None:
        """Why the stored value (str, bytes, or None) fails the schema, or None if it fits."""
        if stored is None:
            return None
        try:
            value = _loads(stored if type(stored) is str else bytes(stored).decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return "the value is not JSON text, and the schema of the topic needs a JSON object"
        if type(value) is not dict:
            return (f"the value is a JSON {json_type(value)}, and the schema of the topic "
                    "needs a JSON object")
        return self._walk(value)

    def _walk(self, value: dict[str, Any]) -> str | None:
        """Why a parsed JSON object fails the schema's rows, or None: :class:`_SurePlan`'s
        quick yes, else :meth:`_word`, which decides."""
        if self._sure_plan.fits(value):
            return None
        return self._word(value)

    def _word(self, value: dict[str, Any]) -> str | None:
        """Why a parsed JSON object fails the schema's rows, or None: the verdict. The test
        of a present value is :func:`_fits`'s, written out in the loop (a call per row
        costs as much)."""
        for item, key, keys, container, types, lo, hi, matches, required in self._plan:
            if container is None:
                here = value.get(key, _ABSENT) if key is not None else _at(value, keys)
                kind = type(here)
                if kind in types:
                    if lo is not None and (kind is int or kind is float):
                        if lo <= here <= hi:
                            continue
                    elif matches is None or kind is not str or matches(here):
                        continue
                elif (here is None or here is _ABSENT) and not required:
                    continue
                found = self._bad(item, here, _at(value, item.parent))
                if found is not None:
                    return found
                continue
            holder = _at(value, container)
            pairs: Any
            if item.row.container_type == "array" and type(holder) is list:
                pairs = enumerate(holder)
            elif item.row.container_type == "object" and type(holder) is dict:
                pairs = holder.items()
            else:
                continue
            for at, element in pairs:
                here = _at(element, keys)
                fits = _fits(item, here)
                if fits or (fits is None and not required):
                    continue
                parent = _at(element, item.parent) if type(element) is dict else _ABSENT
                found = self._bad(item, here, parent, at)
                if found is not None:
                    return found
        return None

    @staticmethod
    def _bad(item: _Compiled, here: Any, parent: Any, key: Any = None) -> str | None:
        row = item.row
        kind = "null" if here is _ABSENT else json_type(here)
        if kind == "null":
            if not (row.required and type(parent) is dict):
                return None
        elif kind not in item.types:
            pass
        elif kind in ("integer", "real") and row.lo is not None:
            if row.lo <= here <= row.hi:
                return None
        elif kind == "text" and item.matches is not None:
            if item.matches(here):
                return None
        else:
            return None
        where = "" if key is None else f" (key {key})"
        return f"field {row.label}{where} must be {row.expects}; got {_got(here)}"


_NULLS = frozenset((type(None), _Absent))


class _SurePlan:
    """A quicker walk that says only "fits" or "not sure": a row's test is one type
    lookup in a set that already holds null and missing when the row allows them, and the
    rows are grouped so that a struct's fields share one lookup of the struct and most rows
    cost a two-item loop step (a range or a format is tested only where the row has one).
    Any doubt (a value of another type, a required field missing) leaves the verdict to
    :meth:`ValueCheck._word`, so this never decides a refusal, and
    tests/store/streams/test_schema_fields.py holds that it never says "fits" where the
    verdict is a refusal."""

    __slots__ = ("groups", "elements")

    def __init__(self, compiled: list[_Compiled]) -> None:
        # One group per object the rows look in: the value itself (path ()), or a struct.
        groups: dict[tuple[str, ...], _Group] = {(): _Group()}
        self.elements: list[tuple[tuple[str, ...], type, tuple[str, ...], str,
                                  frozenset[type], Any, Any, Any]] = []
        for c in compiled:
            accept = c.py_types if c.row.required else c.py_types | _NULLS
            if c.container is not None:
                holder = list if c.row.container_type == "array" else dict
                self.elements.append((c.container, holder, c.keys[:-1],
                                      c.keys[-1] if c.keys else "", accept, c.lo, c.hi,
                                      c.matches))
            else:
                groups.setdefault(c.keys[:-1], _Group()).add(c.keys[-1], accept, c.lo, c.hi,
                                                             c.matches)
        self.groups = [(parent, group.plain, group.tests) for parent, group in groups.items()]

    def fits(self, value: dict[str, Any]) -> bool:
        """True: ``value`` fits every row; False: not sure (see the class)."""
        for parent, plain, tests in self.groups:
            holder = _at(value, parent) if parent else value
            # A struct that is null, missing or no object requires nothing; its row decides.
            if type(holder) is not dict:
                continue
            get = holder.get
            for key, accept in plain:
                if type(get(key, _ABSENT)) not in accept:
                    return False
            for key, accept, lo, hi, matches in tests:
                if not _sure(get(key, _ABSENT), accept, lo, hi, matches):
                    return False
        for container, holder_type, parent, key, accept, lo, hi, matches in self.elements:
            held = _at(value, container)
            # null, missing or of another type: the container's row decides
            items: Any
            if type(held) is list and holder_type is list:
                items = held
            elif type(held) is dict and holder_type is dict:
                items = held.values()
            else:
                continue
            for item in items:
                here: Any = item
                if key:
                    inner = _at(item, parent) if parent else item
                    if type(inner) is not dict:
                        continue  # as for a struct above
                    here = inner.get(key, _ABSENT)
                if not _sure(here, accept, lo, hi, matches):
                    return False
        return True


_Tests = list[tuple[str, frozenset[type], Any, Any, Any]]

#: Fewer values than this are walked one by one: a column per row costs more than it saves.
COLUMNS_FROM = 16
_NUMBERS = frozenset((int, float))


class _ColumnPlan:
    """The quick "fits" of many values at once: each row's values gathered as a column, and
    the column tested as a whole (the set of its types against the row's accept set, its
    minimum and maximum against a range, a format's pattern mapped over its strings), so
    the interpreter's cost is per row, not per row and value. Like :class:`_SurePlan` it
    says only "fits" or "not sure"."""

    __slots__ = ("rows",)

    def __init__(self, compiled: list[_Compiled]) -> None:
        self.rows: list[tuple[Any, ...]] = [(c.container, c.row.container_type, c.keys,
                      c.py_types if c.row.required else c.py_types | _NULLS, c.lo, c.hi,
                      c.matches) for c in compiled]

    def fits(self, values: list[dict[str, Any]]) -> bool:
        """True: every one of ``values`` (dicts) fits every row; False: not sure."""
        columns: dict[tuple[str, ...], list[Any]] = {}
        for container, container_type, keys, accept, lo, hi, matches in self.rows:
            if container is None:
                column = _column(columns, values, keys)
            else:
                held = _objects(_column(columns, values, container),
                                list if container_type == "array" else dict)
                items = list(chain.from_iterable(held if container_type == "array"
                                                 else map(dict.values, held)))
                column = _column({}, _objects(items, dict), keys) if keys else items
            kinds = set(map(type, column))
            if not kinds <= accept:
                return False
            if lo is not None and kinds & _NUMBERS:
                numbers = column if kinds <= _NUMBERS else [
                    x for x in column if type(x) is int or type(x) is float]
                if not (lo <= min(numbers) and max(numbers) <= hi):
                    return False
            if matches is not None and str in kinds:
                texts = column if len(kinds) == 1 else [x for x in column if type(x) is str]
                if not all(map(matches, texts)):
                    return False
        return True


def _column(columns: dict[tuple[str, ...], list[Any]], values: list[Any],
            keys: tuple[str, ...]) -> list[Any]:
    """The value at ``keys`` of each object at ``keys[:-1]`` that is a dict (a struct that is
    null, missing or no object requires nothing: its own row decides), kept in ``columns``."""
    column = columns.get(keys)
    if column is None:
        holders = values if len(keys) == 1 else _objects(_column(columns, values, keys[:-1]),
                                                         dict)
        key = keys[-1]
        column = [holder.get(key, _ABSENT) for holder in holders]
        columns[keys] = column
    return column


def _objects(column: list[Any], kind: type) -> list[Any]:
    """The items of ``column`` of exactly ``kind``."""
    return [x for x in column if type(x) is kind]


class _Group:
    """The rows that look in one object: those with a type test only, and the rest."""

    __slots__ = ("plain", "tests")

    def __init__(self) -> None:
        self.plain: list[tuple[str, frozenset[type]]] = []
        self.tests: _Tests = []

    def add(self, key: str, accept: frozenset[type], lo: Any, hi: Any, matches: Any) -> None:
        if lo is None and matches is None:
            self.plain.append((key, accept))
        else:
            self.tests.append((key, accept, lo, hi, matches))


def _sure(here: Any, accept: frozenset[type], lo: Any, hi: Any, matches: Any) -> bool:
    """Whether one value surely fits its row (its accept set, range and format)."""
    kind = type(here)
    if kind not in accept:
        return False
    if kind is int or kind is float:
        return lo is None or bool(lo <= here <= hi)
    if kind is str:
        return matches is None or bool(matches(here))
    return True


def _format_matcher(fmt: str | None) -> Callable[[str], object] | None:
    """A string test for ``fmt``: a match (truthy) when the string matches one of its GLOBs
    (no ``[^...]``, so fnmatch's reading of them is SQLite's GLOB's), else None; the
    pattern's own ``match``, which ``map`` calls without a Python frame."""
    if fmt is None:
        return None
    return re.compile("|".join(fnmatch.translate(glob) for f, glob in FORMATS if f == fmt)).match
