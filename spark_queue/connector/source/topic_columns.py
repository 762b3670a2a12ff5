"""``valueSchema=topic``: the columns a topic declared (docs/schemas.md), as the read's schema.

At ``load()`` the source answers Spark's ``schema()`` with the subscribed topics' declared
DDL (every subscribed topic must declare the same one), and the read decodes each value into
those columns as it decodes a ``.schema(...)`` given by the user. A stream records each
topic's schema version when it starts; once one has another, its batches end at the offset
the new version starts from (:func:`columns_end`) and the next fails, naming both versions:
a query's columns are fixed for its life, as in Spark, so a changed schema means a restart
(from the same checkpoint), never columns shifted under a running query.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from spark_queue.connector.source.offsets import open_source_store
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import OptionError, SchemaChange, SchemaChangedError

if TYPE_CHECKING:
    from spark_queue.store import Store, TopicSchema


def declared(options: SourceOptions, columns: str | None = None) -> tuple[str, SourceOptions]:
    """The subscribed topics' DDL, and ``options`` carrying each topic's version: the newest,
    or with ``columns`` (the read's ``StructType.simpleString()``, as ``load()`` took them)
    the newest version whose columns those are. A stream starts after its ``load()``; a
    version set in between must not be taken for the one its columns came from, or its
    events would be read in the older columns (tests/end_to_end/test_schema_follow.py)."""
    store = open_source_store(options)
    try:
        with store.snapshot():
            schemas = _schemas(store, options)
            if columns is not None:
                schemas = {t: _version_of(store, s, columns) for t, s in schemas.items()}
    finally:
        store.close()
    ddls = {s.ddl for s in schemas.values()}
    if len(ddls) > 1:
        listed = "; ".join(f"{t}: {s.ddl}" for t, s in sorted(schemas.items()))
        raise OptionError(
            f"{FORMAT_NAME} option 'valueSchema'='topic' needs one schema for every subscribed "
            f"topic; they declare different ones ({listed}). Read them in separate queries, or "
            "give .schema(...) yourself.")
    versions = tuple(sorted((t, s.version) for t, s in schemas.items()))
    return ddls.pop(), dataclasses.replace(options, value_schema_versions=versions)


def _schemas(store: Store, options: SourceOptions) -> dict[str, TopicSchema]:
    topics = ([t.name for t in store.topics() if options.subscribes(t.name)]
              if options.topic_pattern is not None else list(options.topics))
    if not topics:
        raise OptionError(
            f"{FORMAT_NAME} option 'valueSchema'='topic': no topic matches {options.subscription}"
            " yet, so there is no schema to read; create the topic and declare its schema "
            "(`sqliteq topic schema set PATH TOPIC 'DDL'`) first.")
    found = {}
    for topic in topics:
        schema = store.topic(topic).schema()
        if schema is None:
            raise OptionError(
                f"{FORMAT_NAME} option 'valueSchema'='topic': topic {topic!r} declares no "
                f"schema; declare it (`sqliteq topic schema set {options.path} {topic} "
                "'DDL'`), or read with .schema(...) or valueSchema=kafka.")
        found[topic] = schema
    return found


def _version_of(store: Store, newest: TopicSchema, columns: str) -> TopicSchema:
    if newest.simple_string() == columns:
        return newest
    older = [s for s in store.topic(newest.topic).schema_history() if s.simple_string() == columns]
    return older[-1] if older else newest


def columns_end(store: Store, options: SourceOptions, start: dict[str, int]) -> dict[str, int]:
    """Where the query's columns stop applying, per topic: the ``from_offset`` of the first
    version newer than the one the query started with whose columns differ (a version that
    changed only ``on_invalid`` reads alike); topics whose columns hold are left out. The
    planner ends a batch there, so every event before a change is read (and committed) with
    the old columns and none checked against the new version is; a batch that would start
    at or past it raises :class:`SchemaChangedError` instead, so the query's next run, from
    the same checkpoint, reads the first new event in the new columns. The one place of that
    rule: :meth:`SourcePlanner.next_batch` calls it in each batch's snapshot."""
    ends = {}
    for topic, version in options.value_schema_versions:
        now = store.topic(topic).schema()
        if now is None or now.version == version:  # one probe while nothing changed
            continue
        history = store.topic(topic).schema_history()
        read = next((s for s in history if s.version == version), None)
        newer = [s for s in history if s.version > version]
        changed = next((s for s in newer if read is None or s.ddl != read.ddl), None)
        if changed is None and newer:  # only on_invalid changed: the same columns
            continue
        if changed is None or start.get(topic, 0) >= changed.from_offset:
            raise _changed(topic, version, changed or now, now, newer)
        ends[topic] = changed.from_offset
    return ends


def _changed(topic: str, version: int, changed: TopicSchema, now: TopicSchema,
             newer: list[TopicSchema]) -> SchemaChangedError:
    # No newer version (the topic deleted and declared anew): nothing vouches for the change.
    backward = bool(newer) and all(s.compatibility == "backward" for s in newer)
    change = SchemaChange(topic, version, changed.version, "backward" if backward else "none")
    current = "" if now.version == changed.version else f" (now version {now.version})"
    if backward:
        advice = (f"The change is backward compatible (set with compatibility 'backward'): "
                  f"restart the query from the same checkpoint to read version "
                  f"{changed.version}'s columns from offset {changed.from_offset} on, the "
                  "older events null in the new fields; spark_queue.spark.follow_schema "
                  "restarts it by itself.")
    else:
        advice = ("The change was not checked for compatibility (compatibility 'none'): older "
                  "events may not read in the new columns. Check the new schema against the "
                  f"sink, then restart the query (the same checkpoint) to read version "
                  f"{now.version}'s columns.")
    return SchemaChangedError(
        f"{SchemaChangedError.marker(change)} {FORMAT_NAME} source: topic {topic!r}'s schema "
        f"changed from version {version} to version {changed.version}{current} "
        f"({changed.ddl}) at offset {changed.from_offset} while the query read it with "
        "valueSchema=topic; every event before that offset was read with version "
        f"{version}'s columns. A query's columns are fixed while it runs, as in Spark. "
        + advice)
