"""A sink chunk its writer checked against the topic's schema (``TopicSchema.all_fit``, run
where the rows are encoded: the Spark sink's executors) is not checked again at the commit,
and only when the mark names the topic's current version, DDL and all; otherwise the
commit checks it as any other. ``all_fit`` is the commit's own check."""

from __future__ import annotations

import pytest

from spark_queue.errors import SchemaMismatchError
from spark_queue.store import JSON, CheckedAgainst, EncodedChunk, TopicRows
from tests.store.streams.test_schema_fields import CASES, DDL

GOOD = ['{"device":"a","temp":1.5}', '{"device":"b"}']
BAD = ['{"device":"a","temp":"hot"}']


def commit(store, values, checked=None, batch=0):
    return store.commit_sink_batch("s", batch, TopicRows("t", [EncodedChunk(
        values, JSON, checked=checked)]))


def test_all_fit_is_the_commits_check(store):
    schema = store.topic("t").set_schema(DDL)
    for batch, (value, named) in enumerate(CASES):
        fits = schema.all_fit([value])
        assert fits is (named is None), value
        if fits:
            commit(store, [value], batch=batch)
        else:
            with pytest.raises(SchemaMismatchError):
                commit(store, [value], batch=batch)


def test_a_chunk_checked_against_the_current_version_is_stored_as_an_unchecked_one(store):
    schema = store.topic("t").set_schema("device STRING NOT NULL, temp DOUBLE")
    assert schema.all_fit(GOOD)
    commit(store, GOOD, schema.checked, batch=0)
    commit(store, GOOD, None, batch=1)
    events = store.read("t")
    assert [e.value for e in events[:2]] == [e.value for e in events[2:]]
    with store.file.read() as conn:
        assert [v for (v,) in conn.execute("SELECT value FROM sq_events ORDER BY offset")] == (
            GOOD + GOOD)


def test_a_chunk_checked_against_an_older_version_is_checked_again(store):
    old = store.topic("t").set_schema("device STRING NOT NULL, temp STRING")
    assert old.all_fit(BAD)
    store.topic("t").set_schema("device STRING NOT NULL, temp DOUBLE", compatibility="none")
    with pytest.raises(SchemaMismatchError, match="field temp must be DOUBLE"):
        commit(store, BAD, old.checked)
    assert store.topic("t").latest_offset() == 0


def test_a_mark_of_another_schema_under_the_same_version_number_is_checked_again(store):
    store.topic("t").set_schema("device STRING NOT NULL, temp DOUBLE")
    other = CheckedAgainst(1, "device STRING NOT NULL, temp STRING")  # a topic made anew
    with pytest.raises(SchemaMismatchError, match="field temp must be DOUBLE"):
        commit(store, BAD, other)
