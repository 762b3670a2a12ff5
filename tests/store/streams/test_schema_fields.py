"""Which JSON values each Spark type accepts is decided once: the Python check and the
sq_publish trigger read the same rows and give the same verdict."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_queue.errors import SchemaDdlError
from spark_queue.store import Store
from spark_queue.store.streams.schema_ddl import parse_schema
from spark_queue.store.streams.schema_fields import ValueCheck
from spark_queue.store.streams.schema_json import json_schema
from spark_queue.store.streams.schema_rows import FORMATS, flatten

DDL = ("device STRING NOT NULL, temp DOUBLE, n INT, small TINYINT, d DECIMAL(5,2), "
       "ts TIMESTAMP, day DATE, ok BOOLEAN, site STRUCT<id: INT NOT NULL, zone: STRING>, "
       "tags ARRAY<STRING>, rs ARRAY<STRUCT<v: DOUBLE NOT NULL>>, m MAP<STRING, BOOLEAN>")

# (value, the field its refusal names, or None when it fits)
CASES = [
    ('{"device":"a"}', None),
    ('{"device":"a","extra":[1,{"x":2}]}', None),  # keys outside the schema pass
    ('{"device":"a","temp":21}', None),  # a DOUBLE takes a JSON integer
    ('{"device":"a","temp":21.5}', None),
    ('{"device":"a","temp":"21.5"}', "field temp "),
    ('{"tmp":21.5}', "field device "),
    ('{"device":null}', "field device "),
    ('{"device":7}', "field device "),  # a STRING takes JSON strings only
    ('{"device":"a","n":2147483647}', None),
    ('{"device":"a","n":2147483648}', "field n "),
    ('{"device":"a","n":1.0}', "field n "),
    ('{"device":"a","small":-129}', "field small "),
    ('{"device":"a","d":999.99}', None),
    ('{"device":"a","d":1000}', "field d "),
    ('{"device":"a","ts":"2024-05-01T12:00:00.123+02:00"}', None),
    ('{"device":"a","ts":"2024-05-01 12:00"}', None),
    ('{"device":"a","ts":"2024-05-01"}', None),
    ('{"device":"a","ts":1714564800}', None),
    ('{"device":"a","ts":"yesterday"}', "field ts "),
    ('{"device":"a","ts":1.5}', "field ts "),
    ('{"device":"a","day":"2024-05-01"}', None),
    ('{"device":"a","day":"2024-05-01T00:00"}', "field day "),
    ('{"device":"a","ok":false}', None),
    ('{"device":"a","ok":0}', "field ok "),
    ('{"device":"a","site":null}', None),  # a missing struct holds no required field
    ('{"device":"a","site":{"id":1}}', None),
    ('{"device":"a","site":{}}', "field site.id "),
    ('{"device":"a","site":[]}', "field site "),
    ('{"device":"a","tags":["x",null]}', None),
    ('{"device":"a","tags":["x",3]}', "field tags[] (key 1)"),
    ('{"device":"a","tags":"x"}', "field tags "),
    ('{"device":"a","rs":[{"v":1},null]}', None),
    ('{"device":"a","rs":[{"v":1},{}]}', "field rs[].v (key 1)"),
    ('{"device":"a","rs":[5]}', "field rs[] (key 0)"),
    ('{"device":"a","m":{"k":true}}', None),
    ('{"device":"a","m":{"k":1}}', "field m[] (key k)"),
    ('[1]', "the value is a JSON array"),
    ('nope', "the value is not JSON text"),
    ('{"device":"a","temp":NaN}', "the value is not JSON text"),
]


def test_the_python_check_gives_each_verdict():
    check = ValueCheck(flatten(parse_schema(DDL)))
    for value, named in CASES:
        problem = check.problem(value)
        if named is None:
            assert problem is None, value
        else:
            assert problem is not None and named in problem, (value, problem)
    assert check.problem(None) is None  # a tombstone is not checked
    assert check.problem(b'{"device":"a"}') is None
    assert "not JSON text" in check.problem(b"\xff{}")


# JSON-like values near the schema's fields: right and wrong types, nulls, missing keys,
# edge numbers, formatted and unformatted strings, nested objects and arrays.
_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-2 ** 64, 2 ** 64), st.sampled_from(
        [-129, -128, 127, 128, 999.99, 1000, 1000.5, 1.5, 0.0, 2 ** 31, 1714564800]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["a", "2024-05-01", "2024-05-01T12:00", "2024-05-01 12:00:00Z", "x1"]))
_JSONISH = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["id", "zone", "v", "k", "q"]), inner, max_size=3)),
    max_leaves=8)
_NAMES = ["device", "temp", "n", "small", "d", "ts", "day", "ok", "site", "tags", "rs", "m"]


@settings(max_examples=3000, deadline=None)
@given(st.dictionaries(st.sampled_from(_NAMES), _JSONISH, max_size=len(_NAMES)))
def test_the_quick_walk_never_vouches_for_a_value_the_verdict_refuses(value):
    # The quick walk (_SurePlan) answers "fits" or "not sure"; the wording walk decides.
    check = ValueCheck(flatten(parse_schema(DDL)))
    if check._sure_plan.fits(value):
        assert check._word(value) is None, value


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(_NAMES), _JSONISH, max_size=len(_NAMES)),
                min_size=1, max_size=12))
def test_the_column_check_never_vouches_for_a_batch_with_a_value_the_verdict_refuses(values):
    # The check of many values at once (_ColumnPlan), a column per row: "fits" or "not sure".
    check = ValueCheck(flatten(parse_schema(DDL)))
    if check._column_plan.fits(values):
        assert all(check._word(value) is None for value in values), values


def test_the_quick_walk_vouches_for_the_values_that_fit():
    # Otherwise it saves nothing: every fitting case is answered without the wording walk.
    check = ValueCheck(flatten(parse_schema(DDL)))
    for value, named in CASES:
        parsed = json.loads(value) if named is None else None
        if type(parsed) is dict:
            assert check._sure_plan.fits(parsed), value
            assert check._column_plan.fits([parsed] * 20), value
    fitting = [json.loads(value) for value, named in CASES if named is None]
    assert check._column_plan.fits([v for v in fitting if type(v) is dict])
    assert check.fits_objects([v for v in fitting if type(v) is dict] * 2)


def test_the_trigger_gives_the_python_checks_verdict_through_the_stdlib_sqlite3(tmp_path):
    """Both checks, one corpus: the stdlib's SQLite (3.40 here) runs the trigger in another
    process, as a foreign client would."""
    path = str(tmp_path / "s.db")
    with Store(path) as store:
        store.topic("t").set_schema(DDL)
    script = textwrap.dedent("""
        import json, sqlite3, sys
        conn = sqlite3.connect(sys.argv[1], isolation_level=None)
        verdicts = []
        for value in json.loads(sys.argv[2]):
            try:
                conn.execute("INSERT INTO sq_publish (topic, value) VALUES ('t', ?)", (value,))
                verdicts.append(None)
            except sqlite3.OperationalError as exc:
                verdicts.append(str(exc))
        print(json.dumps(verdicts))
    """)
    values = [value for value, _ in CASES]
    done = subprocess.run([sys.executable, "-c", script, path, json.dumps(values)],
                          capture_output=True, text=True, check=True)
    check = ValueCheck(flatten(parse_schema(DDL)))
    for (value, named), verdict in zip(CASES, json.loads(done.stdout), strict=True):
        python = check.problem(value)
        if named is None:
            assert verdict is None, (value, verdict)
        else:
            assert verdict is not None and named in verdict, (value, verdict)
            assert "sq_publish: topic t (schema version 1): " + python in verdict
    with Store(path) as store:
        stored = [e.value for e in store.read("t")]
    assert len(stored) == sum(named is None for _, named in CASES)


def test_the_formats_are_the_files_formats(store):
    assert sorted(store.conn.execute("SELECT format, glob FROM sq_schema_formats")) == sorted(
        FORMATS)


def test_an_array_inside_array_elements_is_refused_at_parse():
    with pytest.raises(SchemaDdlError, match="one level of elements"):
        flatten(parse_schema("a ARRAY<ARRAY<INT>>"))
    with pytest.raises(SchemaDdlError, match="one level of elements"):
        flatten(parse_schema("a MAP<STRING, STRUCT<b: ARRAY<INT>>>"))


def test_the_json_schema_gives_the_same_verdicts_but_for_integral_reals():
    """The JSON Schema a Kafka side registers agrees with the store's check on the corpus;
    JSON Schema's integer takes 1.0, the one case it must differ on."""
    import jsonschema

    document = json_schema(DDL, "t")
    validator = jsonschema.Draft202012Validator(document)
    jsonschema.Draft202012Validator.check_schema(document)
    for value, named in CASES:
        if value in ('{"device":"a","n":1.0}', "nope", '{"device":"a","temp":NaN}'):
            continue  # 1.0: JSON Schema's integer; the others are not JSON at all
        assert validator.is_valid(json.loads(value)) == (named is None), value
    assert validator.is_valid({"device": "a", "n": 1.0})


def test_a_dict_checked_as_given_gets_the_verdict_of_its_stored_text():
    check = ValueCheck(flatten(parse_schema(DDL)))
    for value, named in CASES:
        try:
            parsed = json.loads(value, parse_constant=lambda name: 1 / 0)
        except (ValueError, ZeroDivisionError):
            continue  # not JSON: no writer holds such a dict
        if type(parsed) is not dict:
            assert not check.fits_objects([parsed]), value
            continue
        assert check.fits_objects([parsed]) is (named is None), value
    assert check.fits_objects([{"device": "a"}, {"device": "b", "tags": ["x"]}])
    assert not check.fits_objects([{"device": "a"}, {"tmp": 1}])


def test_what_a_dict_check_cannot_vouch_for_falls_back_to_the_stored_text():
    check = ValueCheck(flatten(parse_schema(DDL)))
    # Encoded as JSON arrays and objects, which fit; checked as given, they are not lists
    # and dicts, so the caller checks the text instead.
    assert not check.fits_objects([{"device": "a", "tags": ("x",)}])
    assert not check.fits_objects([{"device": "a", "m": collections.OrderedDict(k=True)}])
    # A field a non-str key is encoded as: {True: "x"} is stored as {"true": "x"}.
    named = ValueCheck(flatten(parse_schema("`true` INT, ok BOOLEAN")))
    assert not named.fits_objects([{"ok": True}])
    assert named.problem(json.dumps({"ok": True, True: "x"})) is not None


def test_publish_of_dicts_stores_their_text_and_refuses_as_the_text_check_words_it(store):
    store.topic("t").set_schema("device STRING NOT NULL, tags ARRAY<STRING>")
    store.publish("t", {"device": "a", "tags": ("x", "y")})  # a tuple: the text is checked
    store.publish_many("t", [{"device": "b"}, {"device": "c", "tags": ["z"]}])
    with pytest.raises(Exception, match=r"field device must be STRING \(a JSON string\); "
                                         r"got nothing"):
        store.publish_many("t", [{"device": "d"}, {"tags": []}])
    with pytest.raises(Exception, match=r"field tags\[\] \(key 0\) must be STRING"):
        store.publish("t", {"device": "e", "tags": [1]})
    with store.file.read() as conn:
        assert [v for (v,) in conn.execute("SELECT value FROM sq_events ORDER BY offset")] == [
            '{"device":"a","tags":["x","y"]}', '{"device":"b"}', '{"device":"c","tags":["z"]}']
